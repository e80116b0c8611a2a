/* Generated from schemas/tools.schema.json by web/scripts/generate-types.mjs: do not edit. */
/* A JSON form of stepscope.analysis (its registry and its tools); regenerate with `make schemas`. */

/**
 * GET /api/tools: every tool of the registry, in menu order.
 */
export interface ToolsAnswer {
  analyses: AnalysisInfo[];
  checked: boolean;
  tools: ToolInfo[];
  unavailable: {
    [k: string]: string;
  };
}
/**
 * An analysis over several profiles as ``/api/tools`` lists it (``AnalysisSpec.to_json``).
 */
export interface AnalysisInfo {
  description: string;
  inputs: string;
  name: string;
  options: OptionInfo[];
  output: string;
  title: string;
}
/**
 * An option as ``/api/tools`` and ``stepscope tools --format json`` list it.
 */
export interface OptionInfo {
  choices: string[];
  choices_from: string | null;
  default: number | string | boolean;
  help: string;
  minimum: number | null;
  name: string;
  resets: string[];
  type: string;
}
/**
 * A registry entry as ``/api/tools`` lists it (``ToolSpec.to_json``).
 */
export interface ToolInfo {
  description: string;
  name: string;
  options: OptionInfo[];
  output: string;
  title: string;
}
