"use strict";
// The assembly view: builds the page from a result JSON (the dict `ctxasm assemble` prints and
// POST /v1/assemble returns). Every value from the result goes into the page as text
// (textContent, append of strings) or as a number; markup is never parsed from data, and a url
// becomes a link only when its scheme is http or https. Bidi controls in data are drawn as
// escapes (\u202E), so a url or an id cannot reorder what the page shows of it; the prompt's
// lines each take the direction of their own first letter.
const CtxasmView = (() => {
  const REASONS = {
    access_denied: "the principal may not read it",
    empty: "blank text",
    below_threshold: "score under min_score, or no query word found",
    top_k: "ranked beyond top_k",
    duplicate: "repeats a selected passage",
    merged: "an overlapping window stitched into a selected passage",
    over_budget: "did not fit what was left of the budget",
    priority_cutoff: "after the first passage that did not fit under strict priority",
    untokenizable: "an unbroken run no tokenizer counts in linear time",
    injection: "flagged by the injection scan",
    history_trimmed: "an earlier conversation turn that did not fit",
  };
  // Budget sections: [key, label]; the key names the CSS class of the segment.
  const WINDOW_SECTIONS = [
    ["system", "system"],
    ["query", "query"],
    ["history", "history"],
    ["sources", "sources"],
    ["overhead", "format overhead"],
    ["join", "sources join"],
    ["unused", "unused"],
    ["margin", "margin"],
    ["reserved", "reserved output"],
  ];

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }
  const num = (value) => (typeof value === "number" && Number.isFinite(value) ? value : 0);
  const int = (value) => num(value).toLocaleString("en-US");
  // Explicit bidi embeddings, overrides and isolates: drawn as they are, they reorder the text
  // around them ("https://evil.example/\u202Egpj.exe" reads ".../exe.jpg"). Bidi marks (LRM,
  // RLM, ALM) reorder no letter, only the punctuation beside them, and right-to-left prose
  // needs them: they are escaped too in what names something (ids, urls, labels, sources).
  const CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;
  const BIDI = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;
  const escapeBidi = (found) => `\\u${found.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
  const raw = (value) => (value === null || value === undefined ? "" : String(value));
  // Every string the page draws from data goes through text(), or prose() for the prompt's
  // own text and the names read from it, where the marks right-to-left writing uses stay.
  const text = (value) => raw(value).replace(BIDI, escapeBidi);
  const prose = (value) => raw(value).replace(CONTROLS, escapeBidi);
  function score(value) {
    return typeof value === "number" && Number.isFinite(value) ? String(+value.toPrecision(4)) : "n/a";
  }
  function percent(part, whole) {
    return whole > 0 ? `${((100 * part) / whole).toFixed(part / whole < 0.01 ? 2 : 1)}%` : "0%";
  }

  function safeLink(url) {
    let parsed = null;
    try {
      parsed = new URL(raw(url));
    } catch (error) {
      parsed = null;
    }
    if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
      return el("span", {}, text(url));
    }
    const link = el("a", { href: parsed.href, rel: "noopener noreferrer nofollow" }, text(url));
    // "https://bank.example@evil.example/" goes to evil.example: say where, after the link.
    if (!parsed.username && !parsed.password) return link;
    return el("span", {}, link, el("span", { class: "muted" }, ` (host ${text(parsed.host)})`));
  }

  // The report rounds costs to 8 decimals: shown as it has them, without trailing zeros.
  function usd(value) {
    if (typeof value !== "number" || !Number.isFinite(value)) return "n/a";
    return `$${value.toFixed(8).replace(/\.?0+$/, "")}`;
  }

  function facts(result, report) {
    const budget = report.budget || {};
    const limit = num(budget.context_window) - num(budget.reserve_output) - num(budget.margin);
    const entries = [
      ["model", text(report.model) || "n/a"],
      ["tokenizer", `${text(report.tokenizer) || "n/a"} (${report.exact_count === false ? "estimate" : "exact"})`],
      ["prompt tokens", `${int(report.total_tokens)} of ${int(limit)}`],
      ["sources tokens", `${int(report.context_tokens)} of ${int(budget.context)}`],
      ["passages", `${int(report.selected)} of ${int(report.considered)} included`],
      ["input cost", inputCost(report)],
    ];
    if (report.query_class) entries.push(["query class", text(report.query_class)]);
    const relevance = report.relevance && typeof report.relevance === "object" ? report.relevance : {};
    if (relevance.method) {
      entries.push(["relevance", relevance.note ? `${text(relevance.method)}: ${text(relevance.note)}` : text(relevance.method)]);
    }
    const turn = report.history && typeof report.history === "object" ? report.history.relevance_turn : null;
    if (typeof turn === "number") entries.push(["follow-up", `read with history turn ${int(turn)}`]);
    if (result.id !== undefined && result.id !== null) entries.push(["request id", text(result.id)]);
    const list = el("dl", { class: "facts" });
    for (const [name, value] of entries) list.append(el("div", {}, el("dt", {}, name), el("dd", {}, value)));
    return list;
  }

  // Without the prompt cache: the report's cost; with it, the cache section's two costs.
  function inputCost(report) {
    const cache = report.cache && typeof report.cache === "object" ? report.cache : null;
    if (!cache || typeof cache.cost_usd !== "number") return usd(report.cost_usd);
    return `${usd(cache.cost_usd)} with the prompt cache, ${usd(cache.cost_usd_uncached)} without`;
  }

  // The report's own figures. budget.overhead is counted with an empty sources block and
  // context_tokens counts the block alone, as one text, so the tokens where the sources meet
  // the rest of the prompt and each other are in neither: "sources join" is total_tokens less
  // the sections, shown when not zero (a token or two, or up to about one per source where a
  // cache plan sends each source as an anthropic content block of its own).
  function windowSections(report) {
    const budget = report.budget || {};
    const values = {
      system: num(budget.system),
      query: num(budget.query),
      history: num(budget.history),
      sources: num(report.context_tokens),
      overhead: num(budget.overhead),
      margin: num(budget.margin),
      reserved: num(budget.reserve_output),
    };
    const total = num(report.total_tokens);
    values.join = total - values.system - values.query - values.history - values.sources - values.overhead;
    values.unused = Math.max(0, num(budget.context_window) - values.reserved - values.margin - total);
    return WINDOW_SECTIONS.filter(([key]) => key !== "join" || values.join !== 0)
      .map(([key, label]) => ({ key, label, tokens: values[key] }));
  }

  function bar(sections, name, thin) {
    const whole = Math.max(1, sections.reduce((sum, s) => sum + s.tokens, 0));
    const node = el("div", { class: thin ? "bar thin" : "bar", role: "group", "aria-label": name });
    for (const section of sections) {
      const label = `${section.label}: ${int(section.tokens)} tokens (${percent(section.tokens, whole)})`;
      const props = { class: `seg seg-${section.key}`, title: label, "data-tokens": String(section.tokens) };
      if (section.focusable) Object.assign(props, { tabindex: "0", role: "img", "aria-label": label });
      const segment = el(section.href ? "a" : "span", props);
      if (section.href) {
        // one link per passage: reachable by pointer, kept out of the tab order (the table has them)
        segment.setAttribute("href", section.href);
        segment.setAttribute("tabindex", "-1");
      }
      segment.style.width = `${(100 * Math.max(0, section.tokens)) / whole}%`;
      node.append(segment);
    }
    return node;
  }

  function budgetSection(report) {
    const sections = windowSections(report).map((s) => ({ ...s, focusable: true }));
    const window = num((report.budget || {}).context_window);
    const legend = el("ul", { class: "legend" });
    for (const s of sections) {
      legend.append(el("li", {}, el("span", { class: `swatch seg-${s.key}`, "aria-hidden": "true" }),
        `${s.label} ${int(s.tokens)}`));
    }
    const prompt = [];
    const named = new Map(sections.map((s) => [s.key, { ...s, focusable: false }]));
    for (const key of ["system", "query", "history"]) prompt.push(named.get(key));
    let shares = 0;
    for (const item of list(report.included)) {
      const tokens = num(item.tokens);
      shares += tokens;
      prompt.push({ key: "passage", label: `${text(item.label)} (${text(item.id)})`, tokens,
        href: `#row-${num(item.position)}` });
    }
    const framing = Math.max(0, num(report.context_tokens) - shares);
    if (framing) prompt.push({ key: "sources", label: "sources framing", tokens: framing });
    prompt.push(named.get("overhead"));
    if (named.has("join")) prompt.push(named.get("join"));
    const section = el("section", { "aria-labelledby": "budget-title" },
      el("h2", { id: "budget-title" }, "Where the budget went"),
      el("p", { class: "muted" }, `The context window: ${int(window)} tokens. Hover or focus a segment for its exact count.`),
      bar(sections, "context window by section", false),
      legend);
    if (named.has("join")) {
      section.append(el("p", { class: "muted" }, "sources join: the tokens where the sources meet " +
        "the rest of the prompt and each other, counted in neither the format overhead (counted " +
        "with an empty sources block) nor the sources (counted alone, as one text). Usually a " +
        "token or two (the blank line around the sources; negative when a token merges across " +
        "it); with the anthropic format and a prompt-cache plan, which sends each source as a " +
        "content block of its own, up to about one per source."));
    }
    section.append(
      el("h3", {}, `Inside the prompt: ${int(report.total_tokens)} tokens, each passage its own segment`),
      bar(prompt, "prompt by section and passage", true));
    return section;
  }

  // What report.cache says, in its own figures; absent when the assembly did not plan for it.
  function cacheSection(report) {
    const cache = report.cache;
    if (!cache || typeof cache !== "object") return null;
    const entries = [
      ["identical prefix", `${int(cache.prefix_tokens)} tokens, ${int(cache.prefix_sources)} sources ` +
        `(${int(cache.reused_context_tokens)} tokens of sources)`],
      ["read from the cache", `${int(cache.cached_tokens)} tokens`],
      ["written to the cache", `${int(cache.written_tokens)} tokens`],
      ["input cost with the cache", usd(cache.cost_usd)],
      ["input cost without", usd(cache.cost_usd_uncached)],
    ];
    const facts = el("dl", { class: "facts" });
    for (const [name, value] of entries) facts.append(el("div", {}, el("dt", {}, name), el("dd", {}, value)));
    const section = el("section", { "aria-labelledby": "cache-title" },
      el("h2", { id: "cache-title" }, "Prompt cache"), facts);
    if (cache.rule) section.append(el("p", { class: "muted" }, text(cache.rule)));
    const breakpoints = list(cache.breakpoints);
    if (breakpoints.length) {
      const { wrap, body } = table(`${breakpoints.length} cache_control breakpoints`,
        [["after sources", true], ["tokens", true], ["reason", false]]);
      for (const point of breakpoints) {
        const given = point && typeof point === "object" ? point : {};
        body.append(el("tr", { class: "breakpoint" }, el("td", { class: "num" }, int(given.after_sources)),
          el("td", { class: "num" }, int(given.tokens)), el("td", {}, text(given.reason))));
      }
      section.append(wrap);
    }
    return section;
  }

  function list(value) {
    return Array.isArray(value) ? value : [];
  }

  function chosen(item, labels) {
    const why = item.chosen;
    if (why && typeof why === "object") {
      const given = typeof why.given_score === "number" ? why.given_score : null;
      const terms = list(why.terms).map(text).filter(Boolean);
      if (why.by === "query") return terms.length ? `covers: ${terms.join(", ")}` : "covers query terms";
      if (why.by === "link") {
        const from = labels.get(text(why.linked_from));
        let said = `linked from ${from ? `[${from}]` : text(why.linked_from) || "an earlier pick"}`;
        if (why.via) said += ` via '${prose(why.via)}'`;
        return said;
      }
      if (why.by === "fill") return "fills the budget left";
      if (why.by === "score") return given !== null ? `retriever score ${score(given)}` : `score ${score(item.score)}`;
    }
    return `score ${score(item.score)}`;
  }

  function compression(item) {
    const cut = item.compression;
    if (!cut || typeof cut !== "object") return "";
    return `cut to ${int(cut.kept_sentences)}/${int(cut.sentences)} sentences, ` +
      `${int(cut.kept_tokens)}/${int(cut.original_tokens)} tokens`;
  }

  function table(caption, headers, wide) {
    const head = el("tr", {});
    for (const [name, numeric] of headers) head.append(el("th", { scope: "col", class: numeric ? "num" : "" }, name));
    const body = el("tbody", {});
    const node = el("table", { class: wide ? "wide" : "" }, el("caption", {}, caption), el("thead", {}, head), body);
    return { wrap: el("div", { class: "scroll" }, node), body };
  }

  function includedSection(report, labels) {
    const items = list(report.included);
    // Scores are on the scale of the method that ranked them (not comparable across methods).
    const relevance = report.relevance && typeof report.relevance === "object" ? report.relevance : {};
    const scale = relevance.method ? `score (${text(relevance.method)})` : "score";
    const { wrap, body } = table(`${items.length} passages in prompt order`, [
      ["pos", true], ["label", false], ["id", false], ["tokens", true], [scale, true],
      ["source", false], ["why chosen", false], ["flags", false], ["compression", false],
    ], true);
    const rows = document.createDocumentFragment();
    for (const item of items) {
      const position = num(item.position);
      const source = el("td", {});
      if (item.source) source.append(el("div", {}, text(item.source)));
      if (item.url) source.append(el("div", {}, safeLink(item.url)));
      const flags = el("td", {});
      for (const flag of list(item.flags)) flags.append(el("span", { class: "badge" }, text(flag)));
      rows.append(el("tr", { id: `row-${position}`, class: "passage" },
        el("td", { class: "num" }, String(position)),
        el("td", {}, el("a", { href: `#prompt-${position}`, title: "where it sits in the prompt" }, text(item.label))),
        el("td", {}, text(item.id)),
        el("td", { class: "num" }, int(item.tokens)),
        el("td", { class: "num" }, score(item.score)),
        source,
        el("td", { class: "chosen" }, chosen(item, labels)),
        flags,
        el("td", {}, compression(item))));
    }
    body.append(rows);
    const section = el("section", { "aria-labelledby": "included-title" },
      el("h2", { id: "included-title" }, `Included: ${int(items.length)} of ${int(report.considered)}`));
    if (report.no_relevant_context) {
      section.append(el("p", { class: "notice" }, "No relevant context: the prompt tells the model so."));
    }
    section.append(wrap);
    return section;
  }

  function excludedSection(report) {
    const groups = new Map();
    for (const item of list(report.excluded)) {
      const reason = text(item.reason) || "unknown";
      if (!groups.has(reason)) groups.set(reason, []);
      groups.get(reason).push(item);
    }
    const count = list(report.excluded).length;
    const section = el("section", { "aria-labelledby": "excluded-title" },
      el("h2", { id: "excluded-title" }, `Excluded: ${int(count)}, by reason`));
    if (!count) section.append(el("p", { class: "muted" }, "Nothing was left out."));
    for (const [reason, items] of groups) {
      const { wrap, body } = table(`${items.length} excluded as ${reason}`, [["id", false], ["stage", false], ["detail", false]]);
      const rows = document.createDocumentFragment();
      for (const item of items) {
        rows.append(el("tr", { class: "excluded" }, el("td", {}, text(item.id)), el("td", {}, text(item.stage)),
          el("td", {}, text(item.detail))));
      }
      body.append(rows);
      const why = Object.prototype.hasOwnProperty.call(REASONS, reason) ? REASONS[reason] : "";
      const summary = el("summary", {}, `${reason} (${int(items.length)})`);
      if (why) summary.append(el("span", { class: "why" }, ` — ${why}`));
      section.append(el("details", { class: "group", "data-reason": reason }, summary, wrap));
    }
    return section;
  }

  // Source labels ([Source N]) in the prompt become links to their rows; the first one that
  // starts a line or follows a tag is where the passage sits, and gets the anchor its row links to.
  const LABEL = /\[(Source \d{1,9})\]/g;

  function promptText(content, positions, anchored) {
    const node = el("pre", { class: "prompt", tabindex: "0" });
    if (!Array.isArray(content)) {
      labelled(node, prose(content), positions, anchored);
      return node;
    }
    // Content blocks (the anthropic format planning for the prompt cache): their texts in
    // order, and a mark after each block that carries a cache_control breakpoint.
    for (const block of content) {
      const given = block && typeof block === "object" ? block : {};
      if (typeof given.text === "string") labelled(node, prose(given.text), positions, anchored);
      else node.append(el("span", { class: "block-mark" }, `[${text(given.type) || "non-text"} block]`));
      const control = given.cache_control;
      if (control && typeof control === "object") {
        const kind = text(control.type);
        node.append(el("span", { class: "cache-mark", title: "the provider caches the prompt up to here" },
          `cache_control breakpoint${kind ? ` (${kind})` : ""}`));
      }
    }
    return node;
  }

  function labelled(node, body, positions, anchored) {
    let last = 0;
    LABEL.lastIndex = 0;
    for (let match = LABEL.exec(body); match !== null; match = LABEL.exec(body)) {
      const position = positions.get(match[1]);
      if (position === undefined) continue;
      node.append(body.slice(last, match.index));
      const link = el("a", { class: "label", href: `#row-${position}` }, match[0]);
      const before = match.index ? body[match.index - 1] : "\n";
      if ((before === "\n" || before === ">") && !anchored.has(position)) {
        anchored.add(position);
        link.id = `prompt-${position}`;
      }
      node.append(link);
      last = match.index + match[0].length;
    }
    node.append(body.slice(last));
  }

  function promptSection(result, report) {
    const positions = new Map();
    for (const item of list(report.included)) positions.set(text(item.label), num(item.position));
    const anchored = new Set();
    const section = el("section", { "aria-labelledby": "prompt-title" },
      el("h2", { id: "prompt-title" }, "What the model will see"));
    const parts = [];
    if (typeof result.system === "string" || Array.isArray(result.system)) {
      parts.push(["system (sent apart)", result.system]);
    }
    for (const message of list(result.messages)) {
      if (message && typeof message === "object") parts.push([text(message.role) || "message", message.content]);
    }
    if (typeof result.text === "string") parts.push(["text prompt", result.text]);
    if (!parts.length) section.append(el("p", { class: "muted" }, "This file holds the report only, not the prompt."));
    for (const [role, content] of parts) {
      section.append(el("div", { class: "message" }, el("h3", {}, role), promptText(content, positions, anchored)));
    }
    return section;
  }

  function timingsSection(report) {
    const timings = report.timings_ms && typeof report.timings_ms === "object" ? report.timings_ms : {};
    const { wrap, body } = table("milliseconds per stage", [["stage", false], ["ms", true]]);
    for (const [stage, ms] of Object.entries(timings)) {
      body.append(el("tr", {}, el("td", {}, text(stage)), el("td", { class: "num" }, num(ms).toFixed(3))));
    }
    const section = el("section", { "aria-labelledby": "timings-title" }, el("h2", { id: "timings-title" }, "Timings"), wrap);
    const history = report.history;
    if (history && typeof history === "object" && num(history.turns)) {
      section.append(el("p", {}, `History: ${int(history.kept)} of ${int(history.turns)} turns kept, ` +
        `${int(history.tokens)} tokens${num(history.summary_tokens) ? `, summary ${int(history.summary_tokens)} tokens` : ""}.`));
    }
    return section;
  }

  function render(result, root) {
    const data = result && typeof result === "object" ? result : {};
    const report = data.report && typeof data.report === "object" ? data.report : {};
    const labels = new Map();
    for (const item of list(report.included)) labels.set(text(item.id), text(item.label));
    const view = document.createDocumentFragment();
    view.append(facts(data, report), budgetSection(report));
    const cache = cacheSection(report);
    if (cache) view.append(cache);
    view.append(includedSection(report, labels), excludedSection(report), promptSection(data, report),
      timingsSection(report));
    root.replaceChildren(view);
    const model = text(report.model);
    if (model) document.title = `ctxasm: ${model}, ${int(report.selected)} of ${int(report.considered)} passages`;
    performance.mark("ctxasm-ready");
  }

  return { render };
})();
