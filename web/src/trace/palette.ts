/**
 * Event colours: a name always gets the same colour (a hash of the text picks one of a fixed
 * palette), so the same op reads the same in every view and every profile, and boxes can be
 * drawn in one batch per colour. Each colour has the text colour that reads on it.
 */

/** Material-like hues at mid lightness: distinct neighbours, none too pale for white text. */
export const PALETTE: readonly string[] = [
  "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
  "#9c755f", "#bab0ac", "#3f6fb5", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e",
  "#e6ab02", "#a6761d", "#0f8b8d", "#c44e52", "#8172b2", "#64b5cd", "#ccb974", "#55a868",
];

/** Merged runs of sub-pixel events: one neutral colour, opacity from their busy fraction. */
export const RUN_COLOR = "#55606e";
/** Opacity steps runs are batched into. */
export const RUN_ALPHA_STEPS = 8;

/** 32-bit FNV-1a of the text's UTF-16 code units: stable across sessions and browsers. */
export function hashName(text: string): number {
  let hash = 0x811c9dc5;
  for (let at = 0; at < text.length; at++) {
    hash ^= text.charCodeAt(at);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** Palette index of a name. */
export function colorIndex(name: string): number {
  return hashName(name) % PALETTE.length;
}

/** Relative luminance (sRGB, WCAG) of "#rrggbb". */
export function luminance(hex: string): number {
  const channel = (at: number): number => {
    const value = parseInt(hex.slice(at, at + 2), 16) / 255;
    return value <= 0.03928 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/** The text colour that contrasts best with each palette colour. */
export const TEXT_ON: readonly string[] = PALETTE.map((hex) => {
  const light = luminance(hex);
  const onWhite = 1.05 / (light + 0.05);
  const onBlack = (light + 0.05) / 0.05;
  return onWhite >= onBlack ? "#ffffff" : "#1f2328";
});

/** Opacity step (0..RUN_ALPHA_STEPS-1) of a busy fraction; instants and empty runs show faintly. */
export function runAlphaStep(busy: number): number {
  if (!(busy > 0)) return 0;
  return Math.min(RUN_ALPHA_STEPS - 1, Math.floor(Math.min(1, busy) * RUN_ALPHA_STEPS));
}

/** The opacity drawn for a step: never invisible, solid when fully busy. */
export function runAlpha(step: number): number {
  return 0.25 + (0.75 * (step + 1)) / RUN_ALPHA_STEPS;
}
