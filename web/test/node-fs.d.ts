// The two calls the trace viewer's tests make to read their fixtures (the project keeps
// @types/node out: the page never runs in Node).
declare module "node:fs" {
  export function readFileSync(path: string): Uint8Array;
  export function readFileSync(path: string, encoding: "utf8"): string;
}
