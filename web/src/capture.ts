/**
 * The "Capture profile" dialog: asks running programs (their profiler servers, host:port)
 * for a trace via POST /api/capture, then follows the capture until it is done and closes
 * onto the new run (the page selects it, as TensorBoard's capture button does); a failed
 * capture keeps the dialog open on its per-host messages. The form markup is in index.html
 * so it exists before any script runs.
 */

import { getCapture, sleep, startCapture, POLL_MS, type CaptureRequest, type CaptureStatus } from "./api";
import { el, replaceChildren } from "./dom";
import { progressBar } from "./components/progress";

/** "a:1, b:2  c:3" -> ["a:1", "b:2", "c:3"]: commas or spaces separate addresses. */
export function parseAddresses(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
}

export interface CaptureForm {
  addresses: string;
  duration: string;
  hostLevel: string;
  pythonLevel: string;
  deviceLevel: string;
  delay: string;
  attempts: string;
}

/** A whole number within [min, max], or an error naming the field. */
function integer(text: string, field: string, min: number, max: number): number {
  const value = Number(text.trim());
  if (text.trim() === "" || !Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${field} must be a whole number from ${min} to ${max}`);
  }
  return value;
}

/** The POST body for the form's values; throws with a message a person can act on. */
export function captureRequest(form: CaptureForm): CaptureRequest {
  const addresses = parseAddresses(form.addresses);
  if (addresses.length === 0) throw new Error("give at least one address (host:port of a profiler server)");
  for (const address of addresses) {
    if (!/^.+:\d+$/.test(address)) throw new Error(`${address}: expected host:port`);
  }
  return {
    addresses,
    duration_ms: integer(form.duration, "duration", 1, 3_600_000),
    host_tracer_level: integer(form.hostLevel, "host tracer level", 0, 3),
    python_tracer_level: integer(form.pythonLevel, "python tracer level", 0, 1),
    device_tracer_level: integer(form.deviceLevel, "device tracer level", 0, 1),
    delay_ms: integer(form.delay, "delay", 0, 3_600_000),
    attempts: integer(form.attempts, "attempts", 1, 100),
  };
}

/**
 * What the dialog does after a status answer: poll again while the capture runs, open the
 * run a finished capture wrote, or stay open on the per-host results (failed, or no run).
 */
export type CaptureOutcome = { kind: "poll" } | { kind: "open"; run: string } | { kind: "stay" };

export function captureOutcome(capture: CaptureStatus): CaptureOutcome {
  if (capture.state === "running") return { kind: "poll" };
  if (capture.state === "done" && capture.run) return { kind: "open", run: capture.run };
  return { kind: "stay" };
}

function input(id: string): HTMLInputElement {
  return document.getElementById(id) as HTMLInputElement;
}

function showStatus(status: HTMLElement, state: string, children: (Node | string | null)[]): void {
  status.setAttribute("data-state", state);
  status.hidden = false;
  replaceChildren(status, children);
}

function statusView(capture: CaptureStatus): (Node | string | null)[] {
  const elapsed = Math.min(capture.elapsed_ms, capture.duration_ms || capture.elapsed_ms);
  const heading =
    capture.state === "running"
      ? `Capturing… ${(elapsed / 1000).toFixed(1)} s of ${(capture.duration_ms / 1000).toFixed(1)} s`
      : capture.state === "done"
        ? capture.run
          ? `Done: new run ${capture.run}`
          : "Done"
        : "Capture failed";
  return [
    el("p", { class: "capture-heading" }, heading),
    capture.state === "running" ? progressBar(elapsed, capture.duration_ms, "elapsed") : null,
    capture.results.length > 0
      ? el(
          "ul",
          { class: "capture-results" },
          capture.results.map((result) =>
            el("li", { "data-address": result.address, "data-ok": String(result.ok), class: result.ok ? "ok" : "failed" }, [
              el("strong", {}, result.address),
              result.host ? ` (${result.host})` : "",
              `: ${result.ok ? "ok" : "failed"}`,
              result.message && result.message !== "ok" ? ` — ${result.message}` : "",
              result.attempts > 1 ? ` [${result.attempts} attempts]` : "",
            ]),
          ),
        )
      : null,
  ];
}

/**
 * Wires the dialog. `openRun` gets the run a finished capture wrote; the page refreshes its
 * runs and selects it, answering whether it could (the run is listed). When it did the
 * dialog closes onto it; when not the dialog stays open and says so.
 */
export function setupCapture(openRun: (run: string) => Promise<boolean>): void {
  const dialog = document.getElementById("capture-dialog") as HTMLDialogElement;
  const form = document.getElementById("capture-form") as HTMLFormElement;
  const submit = document.getElementById("capture-submit") as HTMLButtonElement;
  const status = document.getElementById("capture-status") as HTMLElement;
  let running = false;

  document.getElementById("capture-button")?.addEventListener("click", () => {
    if (!dialog.open) dialog.showModal();
    input("capture-addresses").focus();
  });
  document.getElementById("capture-close")?.addEventListener("click", () => dialog.close());

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (running) return;
    let request: CaptureRequest;
    try {
      request = captureRequest({
        addresses: input("capture-addresses").value,
        duration: input("capture-duration").value,
        hostLevel: input("capture-host-level").value,
        pythonLevel: input("capture-python-level").value,
        deviceLevel: input("capture-device-level").value,
        delay: input("capture-delay").value,
        attempts: input("capture-attempts").value,
      });
    } catch (error) {
      showStatus(status, "failed", [el("p", { class: "error-text" }, (error as Error).message)]);
      return;
    }
    running = true;
    submit.disabled = true;
    void follow(request).finally(() => {
      running = false;
      submit.disabled = false;
    });
  });

  async function follow(request: CaptureRequest): Promise<void> {
    showStatus(status, "running", [el("p", { class: "capture-heading" }, "Starting capture…")]);
    try {
      const { id } = await startCapture(request);
      for (;;) {
        const capture = await getCapture(id);
        showStatus(status, capture.state, statusView(capture));
        const outcome = captureOutcome(capture);
        if (outcome.kind === "stay") return;
        if (outcome.kind === "open") {
          if (await openRun(outcome.run)) {
            dialog.close();
          } else {
            showStatus(status, capture.state, [
              ...statusView(capture),
              el("p", { class: "error-text" }, `${outcome.run} is not listed by the server yet; pick it in the Run selector once it is.`),
            ]);
          }
          return;
        }
        await sleep(POLL_MS);
      }
    } catch (error) {
      showStatus(status, "failed", [el("p", { class: "error-text" }, (error as Error).message)]);
    }
  }
}
