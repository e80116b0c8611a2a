/**
 * The options bar above a tool's page: one control per registry option of the tool (a
 * select where the option has choices, a number field for integers, a checkbox for
 * booleans), labelled with its name and explained by its help on hover. A change calls
 * `onChange` with the tool's new option values (those that differ from the defaults).
 */

import type { OptionInfo, ToolInfo } from "../api";
import { el } from "../dom";
import { optionChoices, withOption } from "../state/options";

export function renderOptions(tool: ToolInfo, values: Record<string, string>, data: unknown, onChange: (values: Record<string, string>) => void): HTMLElement | null {
  if (tool.options.length === 0) return null;
  const controls = tool.options.map((option) => {
    const current = values[option.name] ?? String(option.default);
    const changed = (value: string): void => onChange(withOption(values, option, value));
    return el("label", { class: "tool-option", title: option.help }, [option.name, " ", control(option, current, data, changed)]);
  });
  return el("div", { id: "tool-options", class: "tool-options", role: "group", "aria-label": `${tool.title} options` }, controls);
}

function control(option: OptionInfo, current: string, data: unknown, changed: (value: string) => void): HTMLElement {
  const name = `option-${option.name}`;
  if (option.type === "boolean") {
    const box = el("input", { type: "checkbox", name, checked: current === "true" });
    box.addEventListener("change", () => changed(String(box.checked)));
    return box;
  }
  const choices = optionChoices(option, data);
  if (choices.length > 0) {
    const label = option.default === "" ? "default" : `${String(option.default)} (default)`;
    const options = [el("option", { value: String(option.default) }, label), ...choices.map((choice) => el("option", { value: choice }, choice))];
    const select = el("select", { name }, options);
    select.value = choices.includes(current) ? current : String(option.default);
    select.addEventListener("change", () => changed(select.value));
    return select;
  }
  const input = el("input", { type: option.type === "integer" ? "number" : "text", name, value: current, min: option.minimum ?? undefined, step: option.type === "integer" ? 1 : undefined });
  input.addEventListener("change", () => {
    if (input.checkValidity()) changed(input.value.trim());
  });
  return input;
}
