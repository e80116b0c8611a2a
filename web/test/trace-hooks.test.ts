import { afterEach, describe, expect, it } from "vitest";
import { installHooks, removeHooks, type TraceHooks } from "../src/trace/hooks";

const hooks = (start_ps: number): TraceHooks => ({
  view: () => ({ start_ps, end_ps: start_ps + 1 }),
  drawn: () => ({ events: 0, runs: 0, lanes: 0, sections: [], requests: 0 }),
  eventAt: () => null,
  frameTimes: [],
  frameIntervals: [],
  setView: () => undefined,
  collapsed: () => [],
  axisOrigin: () => start_ps,
  criticalPath: () => null,
});

type Installed = { view(): { start_ps: number } };

describe("the trace viewer's hooks, one viewer or two in a page", () => {
  const globals = globalThis as unknown as { window?: unknown };
  afterEach(() => {
    delete globals.window;
  });
  it("keeps two named viewers' hooks apart, and the single viewer's where it always was", () => {
    globals.window = {};
    const single = {};
    const base = {};
    const next = {};
    installHooks(single, hooks(1));
    installHooks(base, hooks(2), "base");
    installHooks(next, hooks(3), "new");
    const global = (globals.window as { __stepscope: { trace?: Installed; traces?: Record<string, Installed> } }).__stepscope;
    expect(global.trace?.view().start_ps).toBe(1);
    expect(global.traces?.base?.view().start_ps).toBe(2);
    expect(global.traces?.new?.view().start_ps).toBe(3);
    // A viewer removes only its own: another's name, or a newer viewer under its name, stays.
    removeHooks(base, "new");
    expect(global.traces?.new).toBeDefined();
    removeHooks(base, "base");
    expect(global.traces?.base).toBeUndefined();
    expect(global.traces?.new?.view().start_ps).toBe(3);
    expect(global.trace?.view().start_ps).toBe(1);
    removeHooks(single);
    expect(global.trace).toBeUndefined();
  });
});
