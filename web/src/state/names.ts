/**
 * How run and host names are shown in the selectors. The names themselves are ids (the API
 * is asked with them, the address carries them), so these only make labels; the full name
 * goes in the option's `title`, shown on hover.
 */

/** Run names longer than this are shown by the path components that tell them apart. */
export const MAX_RUN_LABEL = 24;
/** What stands for the components a run label leaves out. */
export const CUT = "…";
/**
 * torch's tensorboard_trace_handler names files `<worker>.<timestamp>.pt.trace.json`, the
 * timestamp in ms since the epoch (13 digits; 10 in seconds): a dot and 10+ digits at the end.
 */
const TIMESTAMP_SUFFIX = /^(.+)\.\d{10,}$/;

/** The components of `name` at which it first differs from each of `others` (-1: it cannot be told from one of them by a component of its own). */
function firstDifferences(parts: string[], others: string[][]): number[] {
  return others.map((other) => parts.findIndex((part, position) => other[position] !== part));
}

/**
 * A label per run: the name itself when short or it has no folders; otherwise the path
 * components that tell it from the others (for each other run, the first component where
 * the two differ, counted from the front), those left out shown as "…". The demo's
 * `1-input-bound/2026_12_05_04_52_25` and `2-parallel-input/2026_12_05_04_52_29` show as
 * `1-input-bound/…` and `2-parallel-input/…`: their session folders (timestamps) tell
 * them apart too, but not which is which. The whole name is the option's title.
 */
export function runLabels(names: string[]): string[] {
  const split = names.map((name) => name.split("/"));
  return names.map((name, index) => {
    const parts = split[index] ?? [name];
    if (name.length <= MAX_RUN_LABEL || parts.length < 2) return name;
    const differences = firstDifferences(
      parts,
      split.filter((_, other) => other !== index),
    );
    if (differences.includes(-1)) return name;
    const kept = new Set(differences);
    const label: string[] = [];
    parts.forEach((part, position) => {
      if (kept.has(position)) label.push(part);
      else if (label[label.length - 1] !== CUT) label.push(CUT);
    });
    return label.join("/");
  });
}

/**
 * The extensions of profile files (longest first), which a host named after its file keeps
 * (`rank0.pt` of `rank0.pt.trace.json.gz` in a session folder): its label drops them.
 */
const PROFILE_EXTENSIONS = [".pt.trace.json.gz", ".pt.trace.json", ".trace.json.gz", ".trace.json", ".xplane.pb.gz", ".xplane.pb", ".json.gz", ".json", ".pftrace", ".perfetto-trace", ".pt"];

/** A host name less its profile file's extension(s) and torch's timestamp suffix. */
export function hostLabel(host: string): string {
  const extension = PROFILE_EXTENSIONS.find((suffix) => host.endsWith(suffix) && host.length > suffix.length);
  const bare = extension ? host.slice(0, -extension.length) : host;
  return TIMESTAMP_SUFFIX.exec(bare)?.[1] ?? bare;
}

/**
 * A label per host (`hostLabel`: `rank0.pt` -> `rank0`, `worker0.1700000000000` ->
 * `worker0`), unless that would make two of the run's hosts look the same (two captures
 * of one worker in one folder), which keep their full names.
 */
export function hostLabels(hosts: string[]): string[] {
  const short = hosts.map(hostLabel);
  return hosts.map((host, index) => {
    const label = short[index] ?? host;
    return short.filter((other) => other === label).length > 1 ? host : label;
  });
}
