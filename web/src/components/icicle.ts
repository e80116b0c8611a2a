/**
 * The flame graph's icicle layout, kept apart from the canvas so it is unit-tested without
 * a DOM: the root on top, each frame's children below it, each as wide as its total time
 * is a share of its parent's. Zooming into a frame (the focus) makes it the full width;
 * the frames above it (its ancestors) stay drawn full width too, so clicking one zooms
 * back out. Frames narrower than `minWidth` px are left out (their time stays in their
 * parent's width, as every flame graph tool does).
 */

import { PALETTE, colorIndex } from "../trace/palette";

export interface IcicleNode {
  name: string;
  category: string;
  self_ps: number;
  total_ps: number;
  children: IcicleNode[];
}

export interface IcicleRect {
  node: IcicleNode;
  /** Names from the root down to the node. */
  path: string[];
  x: number;
  width: number;
  depth: number;
}

/** Threads (and the root over several) are the frame of every stack: one neutral colour. */
export const THREAD_CATEGORY = "thread";
export const THREAD_COLOR = "#9aa0a6";

/** A frame's colour: one per category (the same category, the same colour in every view). */
export function categoryColor(category: string): string {
  return category === THREAD_CATEGORY ? THREAD_COLOR : PALETTE[colorIndex(category)]!;
}

/** The nodes along `path` (names from the root down), or null where one is missing. */
export function nodesAlong(root: IcicleNode, path: string[]): IcicleNode[] | null {
  if (path.length === 0 || path[0] !== root.name) return null;
  const nodes = [root];
  for (const name of path.slice(1)) {
    const next = nodes[nodes.length - 1]!.children.find((child) => child.name === name);
    if (!next) return null;
    nodes.push(next);
  }
  return nodes;
}

export function icicleLayout(root: IcicleNode, focus: string[], width: number, minWidth = 0.5): IcicleRect[] {
  const found = nodesAlong(root, focus);
  const along = found ?? [root];
  const path = found ? focus : [root.name];
  const rects: IcicleRect[] = along.map((node, depth) => ({ node, path: path.slice(0, depth + 1), x: 0, width, depth }));
  const place = (parent: IcicleRect): void => {
    let x = parent.x;
    for (const child of parent.node.children) {
      const share = parent.node.total_ps > 0 ? (parent.width * child.total_ps) / parent.node.total_ps : 0;
      if (share >= minWidth) {
        const rect = { node: child, path: [...parent.path, child.name], x, width: share, depth: parent.depth + 1 };
        rects.push(rect);
        place(rect);
      }
      x += share;
    }
  };
  place(rects[rects.length - 1]!);
  return rects;
}

/** The rect under a point (x in px, row from y), or null. */
export function rectAt(rects: IcicleRect[], x: number, row: number): IcicleRect | null {
  return rects.find((rect) => rect.depth === row && x >= rect.x && x < rect.x + rect.width) ?? null;
}
