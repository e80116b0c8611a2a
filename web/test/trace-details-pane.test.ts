import { describe, expect, it } from "vitest";
import { paneState } from "../src/trace/details_pane";

describe("the trace viewer's details pane", () => {
  it("is closed while it has nothing to show, open on anything else", () => {
    expect(paneState("empty")).toBe("closed");
    expect(paneState(null)).toBe("closed");
    for (const kind of ["keys", "event", "run", "summary"]) expect(paneState(kind)).toBe("open");
  });
});
