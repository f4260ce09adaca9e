// The qe page: paste or upload pairs, score them through /v1/batch (streamed, with progress), then a
// sortable, filterable table with score bands the user sets, a histogram, downloads, and each
// segment's most unusual features; with a word model (kind "words"), each pair's MT and source with
// the BAD words highlighted and the BAD gaps marked (/v1/words). Plain JavaScript, no library, nothing loaded from elsewhere; every
// text from the server or the user goes into the page as text (textContent), never as HTML.
"use strict";

const state = {
  models: [],
  model: null,
  rows: [],
  sortKey: "index",
  sortDir: 1,
  token: sessionStorage.getItem("qe-token") || "",
  tableFile: null,
  clipped: 0,
};

const $ = (id) => document.getElementById(id);

function authHeaders(extra) {
  const out = Object.assign({}, extra || {});
  if (state.token) out.Authorization = "Bearer " + state.token;
  return out;
}

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

function setStatus(text) {
  $("status").textContent = text;
}

// ------------------------------------------------------------------ models

async function loadModels() {
  let response;
  try {
    response = await fetch("/v1/models", { headers: authHeaders() });
  } catch (err) {
    showError("cannot reach the server: " + err);
    return;
  }
  if (response.status === 401) {
    $("token-box").hidden = false;
    showError("this server needs its bearer token");
    return;
  }
  const body = await response.json();
  if (!response.ok) {
    showError(body.error || "HTTP " + response.status);
    return;
  }
  $("token-box").hidden = true;
  showError("");
  state.models = body.models;
  state.limits = body.limits;
  const select = $("model");
  select.textContent = "";
  for (const model of state.models) {
    const option = document.createElement("option");
    option.value = model.name;
    option.textContent = model.name;
    select.appendChild(option);
  }
  if (state.models.length) selectModel(state.models[0].name);
}

function selectModel(name) {
  state.model = state.models.find((m) => m.name === name) || null;
  if (!state.model) return;
  const m = state.model;
  $("results").hidden = true;
  $("words").hidden = true;
  if (isWordModel()) {
    selectWordModel(m);
    return;
  }
  const langs = m.languages && m.languages.src ? `${m.languages.src} → ${m.languages.tgt}; ` : "";
  const label = m.label.kind || "score";
  const direction = m.label.direction || "direction unknown";
  const range = m.label.range ? `; range ${m.label.range[0]} to ${m.label.range[1]}` : "";
  const inputs = m.pair_inputs.length ? `; each pair also needs ${m.pair_inputs.join(", ")}` : "";
  const info = $("model-info");
  info.textContent = `${langs}${label}, ${direction}${range}${inputs}`;
  info.title = m.signature || "";
  const [good, light] = defaultBands(m);
  $("good-at").value = good === null ? "" : good;
  $("light-at").value = light === null ? "" : light;
  const op = higherIsBetter() ? "≥" : "≤";
  $("good-op").textContent = op;
  $("light-op").textContent = op;
  $("results").hidden = !state.rows.length;
  if (state.rows.length) render();
}

function isWordModel() {
  return !!state.model && state.model.kind === "words";
}

function selectWordModel(m) {
  const langs = m.languages && m.languages.src ? `${m.languages.src} → ${m.languages.tgt}; ` : "";
  const t = m.thresholds || {};
  const info = $("model-info");
  info.textContent =
    `${langs}word model: tags MT words, gaps and source words OK / BAD (BAD at probability ≥ ` +
    `${fmt(t.target)} MT, ${fmt(t.gaps)} gaps, ${fmt(t.source)} source)`;
  info.title = m.signature || "";
  if (state.wordRows && state.wordRows.length) renderWords();
}

function higherIsBetter() {
  return !state.model || state.model.label.higher_is_better !== false;
}

function defaultBands(model) {
  const kind = model.label.kind || "";
  if (kind.startsWith("WMT12")) return [4, 3];
  if (kind === "HTER") return [0.15, 0.4];
  if (kind.startsWith("DA")) return [0.5, -0.5];
  const range = model.label.range;
  if (!range) return [null, null];
  const third = (range[1] - range[0]) / 3;
  const round = (x) => Math.round(x * 1000) / 1000;
  return model.label.higher_is_better === false
    ? [round(range[0] + third), round(range[0] + 2 * third)]
    : [round(range[1] - third), round(range[1] - 2 * third)];
}

// ------------------------------------------------------------------ input

function textLines(text) {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  while (lines.length && lines[lines.length - 1].trim() === "") lines.pop();
  return lines;
}

function parseTable(text, format) {
  const lines = textLines(text.replace(/^\ufeff/, ""));
  if (format === "jsonl") {
    return lines.map((line, k) => {
      try {
        const pair = JSON.parse(line);
        return { id: pair.id === undefined || pair.id === null ? k : pair.id, src: String(pair.src), mt: String(pair.mt) };
      } catch (err) {
        throw new Error(`line ${k + 1} of the file is not JSON`);
      }
    });
  }
  const header = lines[0].split("\t");
  const at = (name) => header.indexOf(name);
  if (at("src") < 0 || at("mt") < 0) throw new Error("the TSV file's first line must name its columns: src, mt (and id)");
  return lines.slice(1).map((line, k) => {
    const cells = line.split("\t");
    const id = at("id") >= 0 && cells[at("id")] !== "" ? cells[at("id")] : k;
    return { id: id, src: cells[at("src")] || "", mt: cells[at("mt")] || "" };
  });
}

function collectPairs() {
  if (state.tableFile) {
    const { text, format } = state.tableFile;
    const rows = parseTable(text, format);
    return { rows: rows, body: text, format: format };
  }
  const src = textLines($("src").value);
  const mt = textLines($("mt").value);
  if (!src.length) throw new Error("paste source sentences (one per line) and their translations, or choose files");
  if (src.length !== mt.length) throw new Error(`${src.length} source lines but ${mt.length} MT lines`);
  const rows = src.map((s, k) => ({ id: k + 1, src: s, mt: mt[k] }));
  const body = rows.map((r) => JSON.stringify(r)).join("\n") + "\n";
  return { rows: rows, body: body, format: "jsonl" };
}

function readFile(input, then) {
  const file = input.files[0];
  if (!file) return;
  const reader = new FileReader();
  reader.onload = () => then(String(reader.result), file.name);
  reader.onerror = () => showError(`cannot read ${file.name}`);
  reader.readAsText(file);
}

// ------------------------------------------------------------------ scoring

async function score() {
  showError("");
  if (!state.model) {
    showError("no model to score with");
    return;
  }
  let input;
  try {
    input = collectPairs();
  } catch (err) {
    showError(err.message);
    return;
  }
  if (isWordModel()) {
    await tagWords(input.rows);
    return;
  }
  state.rows = input.rows.map((row, index) => Object.assign({ index: index, score: null, unusual: null }, row));
  state.clipped = 0;
  const progress = $("progress");
  progress.max = Math.max(state.rows.length, 1);
  progress.value = 0;
  progress.hidden = false;
  $("score").disabled = true;
  setStatus(`scoring ${state.rows.length} pairs…`);
  const url = `/v1/batch?model=${encodeURIComponent(state.model.name)}&unusual=true&format=${input.format}`;
  const type = input.format === "tsv" ? "text/tab-separated-values" : "application/x-ndjson";
  try {
    const response = await fetch(url, { method: "POST", headers: authHeaders({ "Content-Type": type }), body: input.body });
    if (!response.ok) {
      const error = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
      if (response.status === 401) $("token-box").hidden = false;
      throw new Error(error.error);
    }
    await readResults(response, progress);
  } catch (err) {
    showError(err.message);
    setStatus("");
  } finally {
    $("score").disabled = false;
    progress.hidden = true;
  }
}

async function readResults(response, progress) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let received = 0;
  let done = null;
  let drawn = 0;
  $("results").hidden = false;
  for (;;) {
    const { value, done: end } = await reader.read();
    if (value) buffer += decoder.decode(value, { stream: true });
    const lines = buffer.split("\n");
    buffer = end ? "" : lines.pop();
    for (const line of lines) {
      if (!line.trim()) continue;
      const item = JSON.parse(line);
      if (item.error) throw new Error(item.error);
      if (item.done) {
        done = item;
        continue;
      }
      const row = state.rows[item.index];
      row.score = item.score;
      row.unusual = item.unusual;
      received += 1;
    }
    progress.value = received;
    setStatus(`${received} of ${state.rows.length} pairs scored`);
    if (Date.now() - drawn > 300) {
      render(); // at most about three times a second while a long batch streams in
      drawn = Date.now();
    }
    if (end) break;
  }
  if (!done) throw new Error("the server stopped before the last score");
  state.clipped = done.clipped;
  const clipped = done.clipped ? ` (${done.clipped} clipped to the training label range)` : "";
  setStatus(`Scored ${done.pairs} pairs with ${state.model.name}${clipped}`);
  render();
}

// ------------------------------------------------------------------ word tags

async function tagWords(rows) {
  const model = state.model;
  $("score").disabled = true;
  setStatus(`tagging ${rows.length} pairs…`);
  try {
    const pairs = rows.map((r) => ({ id: r.id, src: r.src, mt: r.mt }));
    const response = await fetch("/v1/words", {
      method: "POST",
      headers: authHeaders({ "Content-Type": "application/json" }),
      body: JSON.stringify({ model: model.name, pairs: pairs }),
    });
    const body = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
    if (!response.ok) {
      if (response.status === 401) $("token-box").hidden = false;
      throw new Error(body.error);
    }
    state.wordRows = body.results.map((result) => Object.assign({ src: rows[result.index].src, mt: rows[result.index].mt }, result));
    renderWords();
    setStatus(`Tagged ${state.wordRows.length} pairs with ${model.name}`);
  } catch (err) {
    showError(err.message);
    setStatus("");
  } finally {
    $("score").disabled = false;
  }
}

function probabilityText(p) {
  return typeof p === "number" ? p.toFixed(3) : "unknown";
}

function token(text, tag, probability) {
  const span = document.createElement("span");
  span.className = tag === "BAD" ? "tok bad" : "tok";
  span.textContent = text;
  span.title = `${tag || "untagged"}: BAD probability ${probabilityText(probability)}`;
  return span;
}

function gap(k, tag, probability) {
  const span = document.createElement("span");
  span.className = tag === "BAD" ? "gap bad" : "gap";
  span.dataset.gap = k;
  span.textContent = tag === "BAD" ? "‸" : " ";
  span.title = `gap ${k}: ${tag === "BAD" ? "a word is missing here" : "OK"} (BAD probability ${probabilityText(probability)})`;
  return span;
}

function wordLine(label, className) {
  const p = document.createElement("p");
  p.className = "line " + className;
  const side = document.createElement("span");
  side.className = "side";
  side.textContent = label;
  p.appendChild(side);
  return p;
}

function renderWords() {
  const list = $("word-pairs");
  const fresh = document.createElement("ol");
  fresh.id = "word-pairs";
  let bad = 0;
  let gaps = 0;
  for (const row of state.wordRows) {
    const li = document.createElement("li");
    li.className = "word-pair";
    li.dataset.index = row.index;
    const id = document.createElement("span");
    id.className = "id";
    id.textContent = `#${row.index + 1} (id ${row.id})`;
    li.appendChild(id);
    const src = wordLine("Source", "src");
    row.src_tokens.forEach((t, k) => {
      if (k) src.appendChild(document.createTextNode(" "));
      src.appendChild(token(t, row.src_tags[k], row.src_bad_probability[k]));
      src.lastChild.dataset.token = k;
    });
    const mt = wordLine("MT", "mt");
    const words = row.mt_tokens;
    words.forEach((t, k) => {
      mt.appendChild(gap(k, row.gap_tags[k], row.gap_bad_probability[k]));
      mt.appendChild(token(t, row.mt_tags[k], row.mt_bad_probability[k]));
      mt.lastChild.dataset.token = k;
    });
    mt.appendChild(gap(words.length, row.gap_tags[words.length], row.gap_bad_probability[words.length]));
    bad += row.mt_tags.filter((t) => t === "BAD").length;
    gaps += row.gap_tags.filter((t) => t === "BAD").length;
    li.appendChild(src);
    li.appendChild(mt);
    fresh.appendChild(li);
  }
  list.replaceWith(fresh);
  const words = state.wordRows.reduce((n, r) => n + r.mt_tags.length, 0);
  $("words-shown").textContent = `${state.wordRows.length} pairs: ${bad} of ${words} MT words BAD, ${gaps} BAD gaps`;
  $("words").hidden = false;
}

// ------------------------------------------------------------------ bands, table, histogram

function thresholds() {
  const good = parseFloat($("good-at").value);
  const light = parseFloat($("light-at").value);
  if (!Number.isNaN(good) && !Number.isNaN(light)) return [good, light];
  const scores = state.rows.map((r) => r.score).filter((s) => s !== null).sort((a, b) => a - b);
  if (!scores.length) return [NaN, NaN];
  const at = (q) => scores[Math.min(scores.length - 1, Math.floor(q * scores.length))];
  return higherIsBetter() ? [at(2 / 3), at(1 / 3)] : [at(1 / 3), at(2 / 3)];
}

function bandOf(score, limits) {
  if (score === null) return "";
  const [good, light] = limits;
  if (higherIsBetter()) return score >= good ? "good" : score >= light ? "light" : "heavy";
  return score <= good ? "good" : score <= light ? "light" : "heavy";
}

const BAND_NAMES = { good: "good", light: "light post-edit", heavy: "heavy post-edit" };

function visibleRows(limits) {
  const words = $("filter").value.trim().toLowerCase();
  const wanted = $("band-filter").value;
  const rows = state.rows.filter((row) => {
    row.band = bandOf(row.score, limits);
    if (wanted && row.band !== wanted) return false;
    return !words || row.src.toLowerCase().includes(words) || row.mt.toLowerCase().includes(words);
  });
  const key = state.sortKey;
  const order = { good: 0, light: 1, heavy: 2, "": 3 };
  const value = (row) => (key === "band" ? order[row.band] : row[key]);
  rows.sort((a, b) => {
    const x = value(a);
    const y = value(b);
    if (x === y) return a.index - b.index;
    if (x === null) return 1;
    if (y === null) return -1;
    if (typeof x === "number" && typeof y === "number") return (x - y) * state.sortDir;
    return String(x).localeCompare(String(y)) * state.sortDir;
  });
  return rows;
}

function cell(tr, text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  tr.appendChild(td);
  return td;
}

function unusualCell(tr, unusual) {
  const td = cell(tr, "", "why");
  if (unusual === null || unusual === undefined) {
    td.textContent = state.model && !state.model.training_statistics ? "(the model holds no training statistics)" : "";
    return;
  }
  for (const item of unusual) {
    const span = document.createElement("span");
    const short = item.feature.replace(/^[^.]*\./, "");
    const sign = item.z >= 0 ? "+" : "";
    span.textContent = `${short} = ${fmt(item.value)} (z ${sign}${item.z.toFixed(1)})`;
    span.title = `${item.feature}: ${item.definition}\ntraining mean ${fmt(item.training_mean)}, sd ${fmt(item.training_std)}`;
    td.appendChild(span);
  }
}

function fmt(x) {
  return Math.abs(x) >= 1000 || (x !== 0 && Math.abs(x) < 0.01) ? x.toExponential(2) : String(Math.round(x * 1000) / 1000);
}

function render() {
  const limits = thresholds();
  const rows = visibleRows(limits);
  const body = $("table").tBodies[0];
  const fresh = document.createElement("tbody");
  for (const row of rows) {
    const tr = document.createElement("tr");
    tr.dataset.index = row.index;
    if (row.score !== null) tr.dataset.score = row.score;
    cell(tr, String(row.index + 1), "num");
    cell(tr, String(row.id));
    cell(tr, row.src, "text");
    cell(tr, row.mt, "text");
    cell(tr, row.score === null ? "…" : row.score.toFixed(3), "num score");
    const band = cell(tr, BAND_NAMES[row.band] || "", "");
    if (row.band) band.className = "band " + row.band;
    unusualCell(tr, row.unusual);
    fresh.appendChild(tr);
  }
  body.replaceWith(fresh);
  $("shown").textContent = `${rows.length} of ${state.rows.length} segments shown`;
  for (const th of document.querySelectorAll("#table th[data-key]")) {
    th.setAttribute("aria-sort", th.dataset.key === state.sortKey ? (state.sortDir > 0 ? "ascending" : "descending") : "none");
  }
  histogram(limits);
}

function histogram(limits) {
  const svg = $("histogram");
  const ns = "http://www.w3.org/2000/svg";
  svg.textContent = "";
  const scores = state.rows.map((r) => r.score).filter((s) => s !== null);
  if (!scores.length) return;
  const range = state.model && state.model.label.range;
  let lo = range ? range[0] : Math.min(...scores);
  let hi = range ? range[1] : Math.max(...scores);
  if (hi <= lo) {
    lo -= 0.5;
    hi += 0.5;
  }
  const bins = 24;
  const counts = new Array(bins).fill(0);
  for (const s of scores) counts[Math.min(bins - 1, Math.max(0, Math.floor(((s - lo) / (hi - lo)) * bins)))] += 1;
  const top = Math.max(...counts);
  const width = 600 / bins;
  counts.forEach((count, k) => {
    const h = top ? (count / top) * 110 : 0;
    const rect = document.createElementNS(ns, "rect");
    rect.setAttribute("x", k * width + 1);
    rect.setAttribute("y", 120 - h);
    rect.setAttribute("width", width - 2);
    rect.setAttribute("height", h);
    rect.setAttribute("class", "bar " + bandOf(lo + ((k + 0.5) / bins) * (hi - lo), limits));
    const title = document.createElementNS(ns, "title");
    const from = lo + (k / bins) * (hi - lo);
    title.textContent = `${count} scores from ${fmt(from)} to ${fmt(from + (hi - lo) / bins)}`;
    rect.appendChild(title);
    svg.appendChild(rect);
  });
  for (const [x, text] of [[lo, fmt(lo)], [hi, fmt(hi)]]) {
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", ((x - lo) / (hi - lo)) * 600);
    label.setAttribute("y", 136);
    label.setAttribute("text-anchor", x === lo ? "start" : "end");
    label.textContent = text;
    svg.appendChild(label);
  }
  const counted = { good: 0, light: 0, heavy: 0 };
  for (const s of scores) counted[bandOf(s, limits)] += 1;
  const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
  $("histogram-caption").textContent =
    `${scores.length} scores, mean ${fmt(mean)}: ${counted.good} good, ${counted.light} light post-edit, ${counted.heavy} heavy post-edit`;
}

// ------------------------------------------------------------------ downloads

function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type: type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function scoredRows() {
  const limits = thresholds();
  return state.rows.map((row) => ({
    index: row.index,
    id: row.id,
    src: row.src,
    mt: row.mt,
    score: row.score,
    band: BAND_NAMES[bandOf(row.score, limits)] || "",
    unusual: row.unusual,
  }));
}

function downloadTsv() {
  const flat = (text) => String(text).replace(/[\t\r\n]/g, " ");
  const lines = ["index\tid\tscore\tband\tsrc\tmt"];
  for (const row of scoredRows()) {
    lines.push([row.index, flat(row.id), row.score === null ? "" : String(row.score), row.band, flat(row.src), flat(row.mt)].join("\t"));
  }
  download(`qe-scores-${state.model.name}.tsv`, "text/tab-separated-values", lines.join("\n") + "\n");
}

function downloadJson() {
  const [good, light] = thresholds();
  const payload = {
    model: state.model.name,
    label: state.model.label,
    signature: state.model.signature,
    bands: { good_at: good, light_at: light },
    clipped: state.clipped,
    results: scoredRows(),
  };
  download(`qe-scores-${state.model.name}.json`, "application/json", JSON.stringify(payload, null, 1) + "\n");
}

// ------------------------------------------------------------------ wiring

document.addEventListener("DOMContentLoaded", () => {
  $("model").addEventListener("change", (e) => selectModel(e.target.value));
  $("score").addEventListener("click", score);
  $("filter").addEventListener("input", render);
  $("band-filter").addEventListener("change", render);
  $("good-at").addEventListener("input", render);
  $("light-at").addEventListener("input", render);
  $("download-tsv").addEventListener("click", downloadTsv);
  $("download-json").addEventListener("click", downloadJson);
  $("token-save").addEventListener("click", () => {
    state.token = $("token").value.trim();
    sessionStorage.setItem("qe-token", state.token);
    loadModels();
  });
  $("src-file").addEventListener("change", (e) => readFile(e.target, (text) => ($("src").value = text)));
  $("mt-file").addEventListener("change", (e) => readFile(e.target, (text) => ($("mt").value = text)));
  $("table-file").addEventListener("change", (e) =>
    readFile(e.target, (text, name) => {
      state.tableFile = { text: text, format: /\.tsv$/i.test(name) ? "tsv" : "jsonl" };
      $("clear-table-file").hidden = false;
      setStatus(`${name} will be scored`);
    })
  );
  $("clear-table-file").addEventListener("click", () => {
    state.tableFile = null;
    $("table-file").value = "";
    $("clear-table-file").hidden = true;
    setStatus("");
  });
  for (const th of document.querySelectorAll("#table th[data-key]")) {
    th.querySelector("button").addEventListener("click", () => {
      const key = th.dataset.key;
      state.sortDir = state.sortKey === key ? -state.sortDir : 1;
      state.sortKey = key;
      render();
    });
  }
  loadModels();
});
