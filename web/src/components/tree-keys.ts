/**
 * Keyboard navigation of a tree view, as the WAI-ARIA tree pattern has it: Up/Down move
 * between visible rows, Right expands a closed row or moves into an open one, Left closes
 * an open row or moves to its parent, Home/End go to the first/last row. Pure: the page
 * says which rows are visible, this says what a key does.
 */

export interface VisibleRow {
  path: string;
  parent: string | null;
  expandable: boolean;
  expanded: boolean;
}

export type TreeAction = { kind: "focus" | "expand" | "collapse"; path: string } | null;

export function treeKey(rows: VisibleRow[], current: string, key: string): TreeAction {
  const index = rows.findIndex((row) => row.path === current);
  const row = rows[index];
  if (!row) return null;
  const focus = (target: VisibleRow | undefined): TreeAction => (target ? { kind: "focus", path: target.path } : null);
  switch (key) {
    case "ArrowDown":
      return focus(rows[index + 1]);
    case "ArrowUp":
      return focus(rows[index - 1]);
    case "Home":
      return focus(rows[0]);
    case "End":
      return focus(rows[rows.length - 1]);
    case "ArrowRight":
      if (row.expandable && !row.expanded) return { kind: "expand", path: row.path };
      return row.expanded ? focus(rows.find((candidate) => candidate.parent === row.path)) : null;
    case "ArrowLeft":
      if (row.expanded) return { kind: "collapse", path: row.path };
      return focus(rows.find((candidate) => candidate.path === row.parent));
    default:
      return null;
  }
}
