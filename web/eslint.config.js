// ESLint for the dashboard (`npm run lint`, part of `npm test`): typescript-eslint's
// type-checked recommended rules over the TypeScript (src, test, vite.config.ts: the files
// tsconfig.json includes), ESLint's recommended rules over the JavaScript (this file, scripts/).
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

export default defineConfig(
  {
    // The build lands outside web/ (vite.config.ts), so only a stray local dist/ is named;
    // src/generated/ holds generated code, checked where it is generated.
    ignores: ["dist/", "src/generated/"],
  },
  js.configs.recommended,
  {
    files: ["**/*.ts"],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    files: ["**/*.js", "**/*.mjs"],
    languageOptions: {
      // Node scripts; the project keeps @types/node and the `globals` package out, so the
      // globals they use are named here.
      globals: { console: "readonly", process: "readonly", URL: "readonly" },
    },
  },
);
