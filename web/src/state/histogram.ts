/**
 * The compare view's step-time distributions: both runs' steady steps counted on one set
 * of bins, so the two histograms share an x axis and can be read against each other.
 *
 * The rule (the browser test bins the runs' overview step times by it independently):
 * - the range is both runs' together, [min, max] of all their steady steps;
 * - the number of bins is the square-root rule over both runs' step count,
 *   k = ceil(sqrt(n_base + n_new)), at most MAX_BINS; k bins of equal width (max - min) / k;
 * - a time t falls in bin floor((t - min) / width), the last bin closed on the right
 *   (the maximum falls in it, not past it); with max == min there is one bin.
 *
 * Why the square-root rule and not Freedman-Diaconis: a capture holds tens of steps, not
 * thousands. Freedman-Diaconis sizes bins from the interquartile range, which on ten or
 * twenty samples is itself noisy, and on a pooled sample of two runs whose times differ
 * (the case the view is for) the IQR spans the gap between them, so the bin count swings
 * with the data; with the steps of one run all equal it is 0 and the rule has no answer.
 * The square-root rule depends only on the count, so two compares of the same lengths get
 * the same number of bins, and it never fails.
 */

export const MAX_BINS = 40;

export interface Bin {
  /** Inclusive start; the end is inclusive only for the last bin. In microseconds. */
  start_us: number;
  end_us: number;
}

export interface SharedHistogram {
  bins: Bin[];
  /** Per bin, how many of each run's steps fall in it. */
  base: number[];
  new: number[];
}

/** The bins' count by the square-root rule over `n` samples (0 for none). */
export function sqrtBinCount(n: number): number {
  return n <= 0 ? 0 : Math.min(MAX_BINS, Math.ceil(Math.sqrt(n)));
}

/** Both runs' times (us) counted on shared equal-width bins (see the module's rule). */
export function sharedHistogram(base: readonly number[], next: readonly number[]): SharedHistogram {
  const all = [...base, ...next];
  if (all.length === 0) return { bins: [], base: [], new: [] };
  const low = Math.min(...all);
  const high = Math.max(...all);
  const count = high > low ? sqrtBinCount(all.length) : 1;
  const width = (high - low) / count;
  const bins: Bin[] = Array.from({ length: count }, (_, index) => ({
    start_us: low + index * width,
    end_us: index === count - 1 ? high : low + (index + 1) * width,
  }));
  const tally = (values: readonly number[]): number[] => {
    const counts = new Array<number>(count).fill(0);
    for (const value of values) {
      const index = width > 0 ? Math.min(count - 1, Math.floor((value - low) / width)) : 0;
      counts[index] = (counts[index] ?? 0) + 1;
    }
    return counts;
  };
  return { bins, base: tally(base), new: tally(next) };
}
