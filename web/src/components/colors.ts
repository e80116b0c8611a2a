/**
 * The op profile's colour scale: XProf colours an op by how well it uses the device, red
 * for poor through yellow to green for good. The tool gives `color_hint` in [0, 1]
 * (FLOPS utilisation, clamped); null means the profile cannot say, which is grey rather
 * than red so "unknown" never reads as "bad".
 */

export const UNKNOWN_COLOR = "#9e9e9e";

/** Hue 0 (red) to 120 (green); anything outside [0, 1] is clamped. */
export function opColor(hint: number | null | undefined): string {
  if (hint === null || hint === undefined || !Number.isFinite(hint)) return UNKNOWN_COLOR;
  const clamped = Math.min(1, Math.max(0, hint));
  return `hsl(${Math.round(clamped * 120)}, 70%, 45%)`;
}
