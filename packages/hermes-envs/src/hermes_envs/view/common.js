// Shared by the hermes-envs and hermes-bench viewer pages: element maker, number
// format, JSON text, a tool output as a shell shows it.
const el = (tag, attrs, ...kids) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") node.textContent = v; else if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v); else node.setAttribute(k, v);
  }
  for (const kid of kids) if (kid !== null && kid !== undefined) node.append(kid);
  return node;
};
const fmt = (x, digits = 3) => x === null || x === undefined ? "—" : (typeof x === "number" ? x.toFixed(digits) : String(x));
function pretty(value) {
  if (typeof value === "string") return value;
  try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
}
function toolText(content) {
  // The terminal tool answers {"output": ..., "exit_code": ...}: show it as a shell would.
  if (typeof content === "string" && content.startsWith("{")) {
    try {
      const parsed = JSON.parse(content);
      if (parsed && typeof parsed.output === "string") {
        return parsed.output + (parsed.exit_code !== undefined ? `\n[exit code ${parsed.exit_code}]` : "");
      }
    } catch (e) { /* not JSON: shown as it is */ }
  }
  return pretty(content);
}
