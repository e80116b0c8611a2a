/**
 * The one DOM helper the page is built with: small enough that a framework would cost
 * more than it saves, typed so attributes and children stay honest.
 */

export type Child = Node | string | number | null | undefined | false;
export type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

/**
 * `el("td", {"data-key": "x", onclick: f}, ["text"])`. Keys starting with "on" are event
 * listeners; `false`/`null`/`undefined` attributes are left out and `true` sets an empty
 * one, as HTML boolean attributes work. Falsy children (other than 0) are skipped so
 * callers can write `cond && el(...)`.
 */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  children: Child | Child[] = [],
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      node.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (value === true) {
      node.setAttribute(name, "");
    } else {
      node.setAttribute(name, String(value));
    }
  }
  append(node, children);
  return node;
}

export function append(parent: Node, children: Child | Child[]): void {
  for (const child of Array.isArray(children) ? children : [children]) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
}

/** Replaces everything inside `parent`. */
export function replaceChildren(parent: Element, children: Child | Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}
