/**
 * How run and host names are shown in the selectors. The names themselves are ids (the API
 * is asked with them, the address carries them), so these only make labels; the full name
 * goes in the option's `title`, shown on hover.
 */

/** Run names longer than this are shown by their last path components. */
export const MAX_RUN_LABEL = 24;
/** What a shortened run label starts with, so it reads as cut. */
export const CUT_PREFIX = "…/";
/**
 * torch's tensorboard_trace_handler names files `<worker>.<timestamp>.pt.trace.json`, the
 * timestamp in ms since the epoch (13 digits; 10 in seconds): a dot and 10+ digits at the end.
 */
const TIMESTAMP_SUFFIX = /^(.+)\.\d{10,}$/;

/**
 * A label per run: the name itself when short or it has no folders; otherwise the fewest
 * trailing path components that no other run ends with (`…/resnet/2024_05_01_12_00_00`),
 * so two sessions of the same date in different folders stay apart.
 */
export function runLabels(names: string[]): string[] {
  return names.map((name) => {
    const parts = name.split("/");
    if (name.length <= MAX_RUN_LABEL || parts.length < 2) return name;
    for (let count = 1; count < parts.length; count++) {
      const tail = parts.slice(-count).join("/");
      const clashes = names.some((other) => other !== name && (other === tail || other.endsWith(`/${tail}`)));
      if (!clashes) return CUT_PREFIX + tail;
    }
    return name;
  });
}

/**
 * A label per host: the name less torch's timestamp suffix (`worker0.1700000000000` ->
 * `worker0`), unless that would make two of the run's hosts look the same (two captures
 * of one worker in one folder), which keep their full names.
 */
export function hostLabels(hosts: string[]): string[] {
  const short = hosts.map((host) => TIMESTAMP_SUFFIX.exec(host)?.[1] ?? host);
  return hosts.map((host, index) => {
    const label = short[index] ?? host;
    return short.filter((other) => other === label).length > 1 ? host : label;
  });
}
