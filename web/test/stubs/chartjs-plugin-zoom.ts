/**
 * chartjs-plugin-zoom loads hammerjs, which reads `window` when loaded; node has none, so
 * the unit tests (which draw no chart) register this empty plugin instead.
 */
export default { id: "zoom" };
