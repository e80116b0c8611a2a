/* ``scan_chrome_events``: the events at the start of a JSON array of Chrome/Kineto trace
   events scanned into columns without a Python object per event
   (stepscope/trace/formats/chrome/scanned.py says what it is for and how its output
   becomes the reader's columns).

   It takes the common case only and stops before an event it calls ODD, so that the
   caller decodes the text from there with msgspec (the reference): an element that is
   not an object, a key written with an escape or given twice, "ts" or "dur" other than
   a number or null, a number with an exponent or longer than MAX_NUMBER bytes, a string
   holding a \u escape, a control character or a byte past ASCII, nesting deeper than
   MAX_DEPTH, or anything that is not JSON. It stops too before an event the text's end
   cuts off, and when its rows are full. What it takes, it reads as msgspec does.

   Per event (row) it writes: the text spans of the ten fields the reader keeps (-1 where
   absent), "ts" and "dur" as doubles (NaN where absent or null), the exact ns of a "ts"
   past 2**43 us read from its digits (columns.decimal_units' rule), whether "dur" is
   absent, and two codes: of the event's (ph, name, cat, pid, tid, bp) texts and of its
   "id" text, each numbered in the order first seen in this array (equal texts, equal
   codes), with the row each code first appeared at; and the args' texts back to back, a
   comma between two, with each event's args length (0: none). */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

enum { F_PH, F_CAT, F_NAME, F_PID, F_TID, F_TS, F_DUR, F_ARGS, F_ID, F_BP, FIELDS };
#define MAX_DEPTH 64
#define MAX_NUMBER 32
/* The fields coded together as one key (columns._KEY_FIELDS). */
static const int KEY_FIELDS[] = {F_PH, F_NAME, F_CAT, F_PID, F_TID, F_BP};
#define KEY_COUNT 6
/* 2**43 us: past it a double is spaced >= 1 ns (columns.EXACT_TS_THRESHOLD_US). */
#define EXACT_THRESHOLD 8796093022208.0
#define INT64_BOUND_UNITS ((INT64_MAX - 1000) / 1000)

typedef struct {
    const uint8_t *text;
    int64_t end;
    int64_t pos;
} Cursor;

static inline void
skip_space(Cursor *c)
{
    while (c->pos < c->end) {
        uint8_t byte = c->text[c->pos];
        if (byte != ' ' && byte != '\n' && byte != '\r' && byte != '\t') {
            return;
        }
        c->pos++;
    }
}

/* Bytes that end a run of plain string text: the quote, the backslash, control
   characters and every byte past ASCII (STOP[byte] != 0). */
static uint8_t STOP[256];

static void
init_stop(void)
{
    for (int byte = 0; byte < 256; byte++) {
        STOP[byte] = byte < 0x20 || byte >= 0x80 || byte == '"' || byte == '\\';
    }
}

/* A string from its opening quote; its end (after the closing quote), or -1 (ODD). */
static int64_t
scan_string(const Cursor *c, int64_t pos, int *escaped)
{
    pos++;
    while (pos < c->end) {
        while (pos + 4 <= c->end && !(STOP[c->text[pos]] | STOP[c->text[pos + 1]] | STOP[c->text[pos + 2]] | STOP[c->text[pos + 3]])) {
            pos += 4;
        }
        while (pos < c->end && !STOP[c->text[pos]]) {
            pos++;
        }
        if (pos >= c->end) {
            return -1;
        }
        uint8_t byte = c->text[pos];
        if (byte == '"') {
            return pos + 1;
        }
        if (byte != '\\') {
            return -1;
        }
        if (pos + 1 >= c->end) {
            return -1;
        }
        uint8_t next = c->text[pos + 1];
        if (next != '"' && next != '\\' && next != '/' && next != 'b' && next != 'f' && next != 'n' && next != 'r' && next != 't') {
            return -1;
        }
        *escaped = 1;
        pos += 2;
    }
    return -1;
}

/* A JSON number from its first byte: its end, or -1 (ODD: not one, an exponent, too long). */
static int64_t
scan_number(const Cursor *c, int64_t pos, int *fraction)
{
    int64_t start = pos;
    if (pos < c->end && c->text[pos] == '-') {
        pos++;
    }
    if (pos >= c->end || c->text[pos] < '0' || c->text[pos] > '9') {
        return -1;
    }
    if (c->text[pos] == '0') {
        pos++;
    } else {
        while (pos < c->end && c->text[pos] >= '0' && c->text[pos] <= '9') {
            pos++;
        }
    }
    *fraction = 0;
    if (pos < c->end && c->text[pos] == '.') {
        pos++;
        int64_t digits = pos;
        while (pos < c->end && c->text[pos] >= '0' && c->text[pos] <= '9') {
            pos++;
        }
        if (pos == digits) {
            return -1;
        }
        *fraction = 1;
    }
    if (pos < c->end && (c->text[pos] == 'e' || c->text[pos] == 'E')) {
        return -1;
    }
    if (pos - start > MAX_NUMBER) {
        return -1;
    }
    return pos;
}

static int64_t
scan_literal(const Cursor *c, int64_t pos, const char *word, int64_t length)
{
    if (c->end - pos < length || memcmp(c->text + pos, word, (size_t)length) != 0) {
        return -1;
    }
    return pos + length;
}

/* Any JSON value from its first byte: its end, or -1 (ODD). Objects and arrays are
   walked with a stack of their kinds (no recursion). */
static int64_t
scan_value(Cursor *c, int64_t pos)
{
    char stack[MAX_DEPTH];
    int depth = 0, escaped = 0, fraction = 0;
    Cursor at = *c;
    for (;;) {
        at.pos = pos;
        skip_space(&at);
        pos = at.pos;
        if (pos >= c->end) {
            return -1;
        }
        uint8_t byte = c->text[pos];
        if (byte == '{' || byte == '[') {
            if (depth == MAX_DEPTH) {
                return -1;
            }
            stack[depth++] = (char)byte;
            at.pos = pos + 1;
            skip_space(&at);
            if (at.pos < c->end && c->text[at.pos] == (byte == '{' ? '}' : ']')) {
                depth--;
                pos = at.pos + 1;
                goto after_value;
            }
            pos = at.pos;
            if (byte == '{') {
                goto object_key;
            }
            continue;
        }
        if (byte == '"') {
            pos = scan_string(c, pos, &escaped);
        } else if (byte == '-' || (byte >= '0' && byte <= '9')) {
            pos = scan_number(c, pos, &fraction);
        } else if (byte == 't') {
            pos = scan_literal(c, pos, "true", 4);
        } else if (byte == 'f') {
            pos = scan_literal(c, pos, "false", 5);
        } else if (byte == 'n') {
            pos = scan_literal(c, pos, "null", 4);
        } else {
            return -1;
        }
        if (pos < 0) {
            return -1;
        }
    after_value:
        for (;;) {
            if (depth == 0) {
                return pos;
            }
            at.pos = pos;
            skip_space(&at);
            if (at.pos >= c->end) {
                return -1;
            }
            uint8_t next = c->text[at.pos];
            char open = stack[depth - 1];
            if (next == ',') {
                pos = at.pos + 1;
                if (open == '{') {
                    goto object_key;
                }
                break;  /* the next element */
            }
            if (next != (open == '{' ? '}' : ']')) {
                return -1;
            }
            depth--;
            pos = at.pos + 1;
        }
        continue;
    object_key: /* pos: after the "{" or the "," before the key */
        at.pos = pos;
        skip_space(&at);
        if (at.pos >= c->end || c->text[at.pos] != '"') {
            return -1;
        }
        pos = scan_string(c, at.pos, &escaped);
        if (pos < 0) {
            return -1;
        }
        at.pos = pos;
        skip_space(&at);
        if (at.pos >= c->end || c->text[at.pos] != ':') {
            return -1;
        }
        pos = at.pos + 1;
    }
}

static int
field_of(const uint8_t *key, int64_t length)
{
    switch (length) {
    case 2:
        if (key[0] == 'p' && key[1] == 'h') return F_PH;
        if (key[0] == 't' && key[1] == 's') return F_TS;
        if (key[0] == 'i' && key[1] == 'd') return F_ID;
        if (key[0] == 'b' && key[1] == 'p') return F_BP;
        return -1;
    case 3:
        if (memcmp(key, "cat", 3) == 0) return F_CAT;
        if (memcmp(key, "pid", 3) == 0) return F_PID;
        if (memcmp(key, "tid", 3) == 0) return F_TID;
        if (memcmp(key, "dur", 3) == 0) return F_DUR;
        return -1;
    case 4:
        if (memcmp(key, "name", 4) == 0) return F_NAME;
        if (memcmp(key, "args", 4) == 0) return F_ARGS;
        return -1;
    }
    return -1;
}

/* --- interning: equal texts, equal codes, numbered in first-seen order ------------- */

typedef struct {
    int64_t *slots;  /* row of each slot's first text, -1 free */
    int64_t *codes;  /* its code */
    uint64_t *hashes;  /* its hash (kept for growing) */
    uint64_t mask;
    int64_t count;
} Table;

/* Allocates a table of ``size`` slots (a power of two), all free; -1 without memory. */
static int
table_alloc(Table *table, uint64_t size)
{
    table->slots = malloc(size * sizeof(int64_t));
    table->codes = malloc(size * sizeof(int64_t));
    table->hashes = malloc(size * sizeof(uint64_t));
    if (table->slots == NULL || table->codes == NULL || table->hashes == NULL) {
        return -1;
    }
    memset(table->slots, 0xff, size * sizeof(int64_t));
    table->mask = size - 1;
    return 0;
}

static void
table_free(Table *table)
{
    free(table->slots);
    free(table->codes);
    free(table->hashes);
}

/* Starts small (a batch holds a few hundred distinct keys) and doubles at half full:
   sized by the rows, clearing and faulting in its memory was most of a scan. */
static int
table_init(Table *table)
{
    table->count = 0;
    return table_alloc(table, 1024);
}

/* Doubles the table; -1 without memory (the table is then left as it was). */
static int
table_grow(Table *table)
{
    Table bigger;
    bigger.count = table->count;
    if (table_alloc(&bigger, (table->mask + 1) * 2) < 0) {
        table_free(&bigger);
        return -1;
    }
    for (uint64_t slot = 0; slot <= table->mask; slot++) {
        if (table->slots[slot] < 0) {
            continue;
        }
        uint64_t to = table->hashes[slot] & bigger.mask;
        while (bigger.slots[to] >= 0) {
            to = (to + 1) & bigger.mask;
        }
        bigger.slots[to] = table->slots[slot];
        bigger.codes[to] = table->codes[slot];
        bigger.hashes[to] = table->hashes[slot];
    }
    table_free(table);
    *table = bigger;
    return 0;
}

static inline uint64_t
hash_bytes(uint64_t hash, const uint8_t *bytes, int64_t length)
{
    int64_t i = 0;
    for (; i + 8 <= length; i += 8) {
        uint64_t word;
        memcpy(&word, bytes + i, 8);
        hash = (hash ^ word) * 0x9e3779b97f4a7c15ULL;
        hash ^= hash >> 32;
    }
    for (; i < length; i++) {
        hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
    }
    return hash;
}

static inline int
same_spans(const uint8_t *text, const int64_t *a, const int64_t *b, const int *fields, int count)
{
    for (int i = 0; i < count; i++) {
        int64_t a0 = a[2 * fields[i]], a1 = a[2 * fields[i] + 1];
        int64_t b0 = b[2 * fields[i]], b1 = b[2 * fields[i] + 1];
        if (a1 - a0 != b1 - b0 || (a0 < 0) != (b0 < 0)) {
            return 0;
        }
        if (a0 >= 0 && memcmp(text + a0, text + b0, (size_t)(a1 - a0)) != 0) {
            return 0;
        }
    }
    return 1;
}

/* The code of row ``row``'s texts of ``fields``; a new one is ``first[code] = row``.
   -1 where the table could not grow (no memory). */
static int64_t
intern(Table *table, const uint8_t *text, const int64_t *spans, int64_t row, const int *fields, int count, int64_t *first)
{
    const int64_t *own = spans + row * 2 * FIELDS;
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (int i = 0; i < count; i++) {
        int64_t s = own[2 * fields[i]], e = own[2 * fields[i] + 1];
        hash = (hash ^ (uint64_t)(s < 0 ? 0x100 : 0x200 + i)) * 0x100000001b3ULL;
        if (s >= 0) {
            hash = hash_bytes(hash, text + s, e - s);
        }
    }
    hash ^= hash >> 29;
    if ((uint64_t)table->count * 2 >= table->mask && table_grow(table) < 0) {
        return -1;
    }
    for (uint64_t slot = hash & table->mask;; slot = (slot + 1) & table->mask) {
        int64_t seen = table->slots[slot];
        if (seen < 0) {
            table->slots[slot] = row;
            table->codes[slot] = table->count;
            table->hashes[slot] = hash;
            first[table->count] = row;
            return table->count++;
        }
        if (same_spans(text, own, spans + seen * 2 * FIELDS, fields, count)) {
            return table->codes[slot];
        }
    }
}

/* --- numbers ------------------------------------------------------------------------- */

/* A number's text (scan_number's) as a double, as msgspec and numpy make it: an integer
   via int64 (so "-0" is 0.0), a decimal correctly rounded (strtod; a locale that does
   not read "." stops it early, which is ODD). 0, or -1 (ODD). */
static int
to_double(const uint8_t *text, int64_t length, int fraction, double *out)
{
    char copy[MAX_NUMBER + 1];
    memcpy(copy, text, (size_t)length);
    copy[length] = '\0';
    if (!fraction) {
        int negative = copy[0] == '-';
        if (length - negative > 18) {
            return -1;
        }
        int64_t value = 0;
        for (int64_t i = negative; i < length; i++) {
            value = value * 10 + (copy[i] - '0');
        }
        *out = (double)(negative ? -value : value);
        return 0;
    }
    char *stop;
    *out = strtod(copy, &stop);
    return stop == copy + length ? 0 : -1;
}

/* columns.decimal_units(text, 0, 1000) for one text: exact ns (1 written) where the text
   is a plain decimal (no sign) of at most 18 whole digits within int64's bound; the
   fraction's first three digits, plus one where the fourth is 5 or more. */
static int
exact_units(const uint8_t *text, int64_t length, int64_t *out)
{
    if (length == 0 || text[0] == '-') {
        return 0;
    }
    int64_t whole = 0, i = 0;
    for (; i < length && text[i] != '.'; i++) {
        if (i == 18) {
            return 0;
        }
        whole = whole * 10 + (text[i] - '0');
    }
    if (whole > INT64_BOUND_UNITS) {
        return 0;
    }
    int64_t fraction = 0;
    int shown = 0, round_up = 0;
    if (i < length) {
        for (int64_t j = i + 1; j < length; j++) {
            if (shown < 3) {
                fraction = fraction * 10 + (text[j] - '0');
                shown++;
            } else {
                round_up = text[j] >= '5';
                break;
            }
        }
    }
    for (; shown < 3; shown++) {
        fraction *= 10;
    }
    *out = whole * 1000 + fraction + round_up;
    return 1;
}

/* --- the scan ------------------------------------------------------------------------ */

/* The args keys whose integer values the scanner reads (the callers' id columns). */
#define MAX_ARG_KEYS 8
typedef struct {
    const uint8_t *name[MAX_ARG_KEYS];
    int64_t length[MAX_ARG_KEYS];
    int count;
} ArgKeys;

typedef struct {
    int64_t *spans;
    double *ts, *dur;
    int64_t *exact_ns, *id_int;
    uint8_t *flags;
    int64_t rows;
    int64_t *arg_ints;  /* (keys.count, rows): -1 where absent */
    ArgKeys keys;
} Rows;

/* FLAG_ID_INT: "id" is a JSON integer of at most 18 digits, its value in id_int.
   FLAG_ARGS_ODD: one of the arg keys holds something else, or comes twice, or a key of
   the args is written with an escape (its arg_ints are then not to be used). */
enum { FLAG_EXACT = 1, FLAG_DUR_ABSENT = 2, FLAG_ID_INT = 4, FLAG_ARGS_ODD = 8 };

/* An integer's text (at most 18 digits, an optional minus) as int64; 0 where it is not one. */
static int
plain_int(const uint8_t *text, int64_t length, int64_t *out)
{
    int negative = length > 0 && text[0] == '-';
    if (length - negative < 1 || length - negative > 18) {
        return 0;
    }
    int64_t value = 0;
    for (int64_t i = negative; i < length; i++) {
        if (text[i] < '0' || text[i] > '9') {
            return 0;
        }
        value = value * 10 + (text[i] - '0');
    }
    *out = negative ? -value : value;
    return 1;
}

/* An object member's key, from c->pos (after the object's "{" or a member's ","): the
   key's text begins at ``*key``; returns the end of its string (past the closing quote),
   with c->pos at the member's value, or -1 (ODD) where no "key": value begins there. */
static int64_t
member_key(Cursor *c, int64_t *key, int *escaped)
{
    skip_space(c);
    if (c->pos >= c->end || c->text[c->pos] != '"') {
        return -1;
    }
    *key = c->pos + 1;
    int64_t after = scan_string(c, c->pos, escaped);
    if (after < 0) {
        return -1;
    }
    c->pos = after;
    skip_space(c);
    if (c->pos >= c->end || c->text[c->pos] != ':') {
        return -1;
    }
    c->pos++;
    skip_space(c);
    return c->pos < c->end ? after : -1;
}

/* After a member's value (c->pos at its end): 1 where a "," leads to another member, 0
   at the object's "}" (c->pos past it), -1 (ODD) otherwise. */
static int
member_next(Cursor *c)
{
    skip_space(c);
    if (c->pos >= c->end) {
        return -1;
    }
    if (c->text[c->pos] == ',') {
        c->pos++;
        return 1;
    }
    if (c->text[c->pos] != '}') {
        return -1;
    }
    c->pos++;
    return 0;
}

/* An args object from its "{": its end, or -1 (ODD); the integer values of ``keys`` at
   its top level written to ``ints[key * stride]`` (left -1 where absent), ``*odd`` set as
   FLAG_ARGS_ODD says. Anything other than an object is scanned as any value. */
static int64_t
scan_args(Cursor *c, int64_t pos, const ArgKeys *keys, int64_t *ints, int64_t stride, int *odd)
{
    if (c->text[pos] != '{') {
        return scan_value(c, pos);
    }
    int seen = 0, escaped = 0;
    c->pos = pos + 1;
    skip_space(c);
    if (c->pos < c->end && c->text[c->pos] == '}') {
        return c->pos + 1;
    }
    for (;;) {
        int64_t key;
        escaped = 0;
        int64_t after = member_key(c, &key, &escaped);
        if (after < 0) {
            return -1;
        }
        *odd |= escaped;
        int which = -1;
        for (int k = 0; k < keys->count; k++) {
            if (after - 1 - key == keys->length[k] && memcmp(c->text + key, keys->name[k], (size_t)keys->length[k]) == 0) {
                which = k;
                break;
            }
        }
        int64_t start = c->pos, end = scan_value(c, start);
        if (end < 0) {
            return -1;
        }
        if (which >= 0) {
            if (seen & (1 << which) || !plain_int(c->text + start, end - start, &ints[which * stride])) {
                *odd = 1;
            }
            seen |= 1 << which;
        }
        c->pos = end;
        int next = member_next(c);
        if (next <= 0) {
            return next < 0 ? -1 : c->pos;
        }
    }
}

/* One event object from its "{": its end, or -1 (ODD). */
static int64_t
scan_event(Cursor *c, int64_t pos, Rows *rows, int64_t row)
{
    int64_t *spans = rows->spans + row * 2 * FIELDS;
    for (int f = 0; f < 2 * FIELDS; f++) {
        spans[f] = -1;
    }
    int seen = 0, escaped = 0, fraction = 0, args_odd = 0;
    int fractions[FIELDS] = {0};
    int64_t *ints = rows->arg_ints + row;
    for (int k = 0; k < rows->keys.count; k++) {
        ints[k * rows->rows] = -1;
    }
    c->pos = pos + 1;
    skip_space(c);
    if (c->pos < c->end && c->text[c->pos] == '}') {
        c->pos++;
        goto done;
    }
    for (;;) {
        int64_t key;
        escaped = 0;
        int64_t after = member_key(c, &key, &escaped);
        if (after < 0 || escaped) {
            return -1;
        }
        int field = field_of(c->text + key, after - 1 - key);
        int64_t start = c->pos, end;
        if (field == F_TS || field == F_DUR) {
            uint8_t byte = c->text[start];
            end = byte == 'n' ? scan_literal(c, start, "null", 4) : scan_number(c, start, &fraction);
            fractions[field] = byte == 'n' ? -1 : fraction;
        } else {
            end = field == F_ARGS ? scan_args(c, start, &rows->keys, ints, rows->rows, &args_odd) : scan_value(c, start);
        }
        if (end < 0) {
            return -1;
        }
        if (field >= 0) {
            if (seen & (1 << field)) {
                return -1;  /* msgspec keeps the last: left to it */
            }
            seen |= 1 << field;
            spans[2 * field] = start;
            spans[2 * field + 1] = end;
        }
        c->pos = end;
        int next = member_next(c);
        if (next < 0) {
            return -1;
        }
        if (next == 0) {
            break;
        }
    }
done:;
    double ts = NAN, dur = NAN;
    uint8_t flags = args_odd ? FLAG_ARGS_ODD : 0;
    int64_t exact = 0;
    if (spans[2 * F_TS] >= 0 && fractions[F_TS] >= 0) {
        int64_t s = spans[2 * F_TS], length = spans[2 * F_TS + 1] - s;
        if (to_double(c->text + s, length, fractions[F_TS], &ts) < 0) {
            return -1;
        }
        if (fabs(ts) >= EXACT_THRESHOLD && exact_units(c->text + s, length, &exact)) {
            flags |= FLAG_EXACT;
        }
    }
    if (spans[2 * F_DUR] >= 0 && fractions[F_DUR] >= 0) {
        int64_t s = spans[2 * F_DUR];
        if (to_double(c->text + s, spans[2 * F_DUR + 1] - s, fractions[F_DUR], &dur) < 0) {
            return -1;
        }
    } else {
        flags |= FLAG_DUR_ABSENT;  /* no "dur", or null: None */
    }
    int64_t id = 0;
    if (spans[2 * F_ID] >= 0 && plain_int(c->text + spans[2 * F_ID], spans[2 * F_ID + 1] - spans[2 * F_ID], &id)) {
        flags |= FLAG_ID_INT;
    }
    rows->id_int[row] = id;
    rows->ts[row] = ts;
    rows->dur[row] = dur;
    rows->exact_ns[row] = flags & FLAG_EXACT ? exact : 0;
    rows->flags[row] = flags;
    return c->pos;  /* past the event's "}" */
}

/* scan_chrome_events(text, spans, ts, dur, exact_ns, id_int, flags, key_codes, key_first,
   id_codes, id_first, args, args_length, arg_keys, arg_ints)
   -> (ended, events, resume, distinct keys, distinct ids, args bytes)

   ``text`` begins with the array's "[" (whitespace before it allowed). Events are read
   until the rows are full, an event is ODD or cut off by the end of the text, or the
   array ends: ``ended`` is 1 where the closing "]" was reached with only whitespace after
   it, and ``resume`` is where the first event not read begins (after its comma), or the
   closing "]", so that the caller can drop the events read and go on from there. */
PyObject *
scan_chrome_events(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objects[14];
    const char *arg_keys;
    Py_ssize_t arg_keys_length;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOy#O:scan_chrome_events", &objects[0], &objects[1], &objects[2], &objects[3], &objects[4], &objects[5], &objects[6],
                          &objects[7], &objects[8], &objects[9], &objects[10], &objects[11], &objects[12], &arg_keys, &arg_keys_length, &objects[13])) {
        return NULL;
    }
    static const char *const NAMES[] = {"text", "spans", "ts", "dur", "exact_ns", "id_int", "flags", "key_codes", "key_first", "id_codes", "id_first", "args", "args_length", "arg_ints"};
    static const ElementType TYPES[] = {UINT8, INT64, FLOAT64, FLOAT64, INT64, INT64, UINT8, INT64, INT64, INT64, INT64, UINT8, INT64, INT64};
    Arrays arrays = {.function = "scan_chrome_events"};
    Array a[14];
    for (int i = 0; i < 14; i++) {
        if (take(&arrays, objects[i], NAMES[i], TYPES[i], i == 1 || i == 13 ? 2 : 1, i == 0 ? READ : WRITE, &a[i]) < 0) {
            return release(&arrays, NULL);
        }
    }
    Array text = a[0], spans = a[1], args_out = a[11];
    ArgKeys keys_of_args = {.count = 0};
    for (Py_ssize_t at = 0; at < arg_keys_length;) {
        const char *stop = memchr(arg_keys + at, '\0', (size_t)(arg_keys_length - at));
        Py_ssize_t length = stop == NULL ? arg_keys_length - at : stop - (arg_keys + at);
        if (keys_of_args.count == MAX_ARG_KEYS) {
            return release(&arrays, argument_error(&arrays, "arg_keys names more than 8 keys"));
        }
        keys_of_args.name[keys_of_args.count] = (const uint8_t *)arg_keys + at;
        keys_of_args.length[keys_of_args.count++] = length;
        at += length + 1;
    }
    if (a[13].columns != spans.rows || a[13].rows != keys_of_args.count) {
        return release(&arrays, argument_error(&arrays, "arg_ints must have a row per arg key and a column per row of spans"));
    }
    int64_t room = spans.rows;
    if (spans.columns != 2 * FIELDS) {
        return release(&arrays, argument_error(&arrays, "spans must have 20 columns"));
    }
    for (int i = 2; i < 13; i++) {  /* (arg_ints: checked above) */
        if (i != 11 && a[i].rows != room) {
            return release(&arrays, argument_error(&arrays, "every row array must have the rows of spans"));
        }
    }
    if (args_out.rows < text.rows) {
        return release(&arrays, argument_error(&arrays, "args must have room for the text's length"));
    }
    if (!STOP['"']) {
        init_stop();
    }
    Table keys = {0}, ids = {0};
    if (table_init(&keys) < 0 || table_init(&ids) < 0) {
        table_free(&keys);
        table_free(&ids);
        return release(&arrays, PyErr_NoMemory());
    }
    static const int ID_FIELD[] = {F_ID};
    Rows rows = {spans.data, a[2].data, a[3].data, a[4].data, a[5].data, a[6].data, room, a[13].data, keys_of_args};
    int64_t *key_codes = a[7].data, *key_first = a[8].data, *id_codes = a[9].data, *id_first = a[10].data, *lengths = a[12].data;
    int64_t count = 0, args_bytes = 0, resume = 0;
    int ended = 0, no_memory = 0;
    Py_BEGIN_ALLOW_THREADS
    Cursor c = {text.data, text.rows, 0};
    uint8_t *joined = args_out.data;
    skip_space(&c);
    if (c.pos < c.end && c.text[c.pos] == '[') {
        c.pos++;
        resume = c.pos;
        skip_space(&c);
        int closed = c.pos < c.end && c.text[c.pos] == ']';
        while (!closed && count < room) {
            skip_space(&c);
            if (c.pos >= c.end || c.text[c.pos] != '{') {
                break;
            }
            int64_t end = scan_event(&c, c.pos, &rows, count);
            if (end < 0) {
                break;
            }
            c.pos = end;
            skip_space(&c);
            if (c.pos >= c.end || (c.text[c.pos] != ',' && c.text[c.pos] != ']')) {
                break;  /* cut off here, or not JSON: not read */
            }
            key_codes[count] = intern(&keys, c.text, rows.spans, count, KEY_FIELDS, KEY_COUNT, key_first);
            id_codes[count] = intern(&ids, c.text, rows.spans, count, ID_FIELD, 1, id_first);
            if (key_codes[count] < 0 || id_codes[count] < 0) {
                no_memory = 1;
                break;
            }
            const int64_t *own = rows.spans + count * 2 * FIELDS;
            int64_t length = own[2 * F_ARGS] >= 0 ? own[2 * F_ARGS + 1] - own[2 * F_ARGS] : 0;
            if (length) {
                if (args_bytes) {
                    joined[args_bytes++] = ',';
                }
                memcpy(joined + args_bytes, c.text + own[2 * F_ARGS], (size_t)length);
                args_bytes += length;
            }
            lengths[count] = length;
            count++;
            closed = c.text[c.pos] == ']';
            c.pos += !closed;
            resume = c.pos;  /* the next event, or the "]" (kept: the array's end) */
        }
        if (closed) {
            resume = c.pos;
            c.pos++;
            skip_space(&c);
            ended = c.pos == c.end;
        }
    }
    Py_END_ALLOW_THREADS
    int64_t distinct_keys = keys.count, distinct_ids = ids.count;
    table_free(&keys);
    table_free(&ids);
    if (no_memory) {
        return release(&arrays, PyErr_NoMemory());
    }
    return release(&arrays, Py_BuildValue("(iLLLLL)", ended, (long long)count, (long long)resume, (long long)distinct_keys, (long long)distinct_ids, (long long)args_bytes));
}
