// Block Kit and mrkdwn as Slack renders them, for the blocks the bot posted (header, section, context,
// actions, divider, image). Interactive elements call `onAction(element, blockId, option)`.
"use strict";

const BlockKit = (() => {
  // Slack's emoji as glyphs every system font has (a browser without an emoji font would show boxes)
  const EMOJI = {
    white_check_mark: ["✔", "ok"], heavy_check_mark: ["✔", "ok"], wastebasket: ["✖", "muted"],
    x: ["✖", "bad"], link: ["↪", "info"], rotating_light: ["⚠", "bad"], warning: ["⚠", "warn"],
    information_source: ["ℹ", "info"], hourglass_flowing_sand: ["⧗", "muted"],
  };

  function escapeHtml(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  // Slack's own escapes in mrkdwn (&lt; &gt; &amp;) are shown as the characters they stand for
  function unslack(s) {
    return String(s).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  }

  // <@U123>, <#C1|name>, <url|label>, <url>
  function special(inner, users) {
    const [target, label] = inner.split("|", 2);
    if (target.startsWith("@")) {
      const id = target.slice(1);
      return `<span class="mention">@${escapeHtml(users[id] || unslack(label || id))}</span>`;
    }
    if (target.startsWith("#")) return `<span class="mention">#${escapeHtml(unslack(label || target.slice(1)))}</span>`;
    if (/^(https?:|mailto:)/.test(target)) {
      return `<a href="${escapeHtml(target)}" target="_blank" rel="noopener">${escapeHtml(unslack(label || target))}</a>`;
    }
    return escapeHtml(`<${inner}>`);
  }

  function inline(text, users) {
    // split out <...> first (Slack's escapes), style the rest
    const parts = String(text).split(/(<[^<>\n]+>)/g);
    return parts.map((part) => {
      if (/^<[^<>\n]+>$/.test(part)) return special(part.slice(1, -1), users);
      let s = escapeHtml(unslack(part));
      s = s.replace(/(^|[\s(“"'>])\*([^*\n]+?)\*(?=$|[\s).,:;!?”"'<])/g, "$1<b>$2</b>");
      s = s.replace(/(^|[\s(“"'>])_([^_\n]+?)_(?=$|[\s).,:;!?”"'<])/g, "$1<i>$2</i>");
      s = s.replace(/(^|[\s(])~([^~\n]+?)~(?=$|[\s).,:;!?])/g, "$1<s>$2</s>");
      s = s.replace(/:([a-z0-9_+-]+):/g, (m, name) =>
        EMOJI[name] ? `<span class="emoji ${EMOJI[name][1]}" title=":${name}:">${EMOJI[name][0]}</span>` : m);
      return s;
    }).join("");
  }

  function mrkdwn(text, users = {}) {
    const out = [];
    String(text || "").split("```").forEach((chunk, i) => {
      if (i % 2 === 1) { out.push(`<pre>${escapeHtml(unslack(chunk.replace(/^\n/, "")))}</pre>`); return; }
      const html = chunk.split(/(`[^`\n]+`)/g).map((piece) =>
        /^`[^`\n]+`$/.test(piece) ? `<code>${escapeHtml(unslack(piece.slice(1, -1)))}</code>` : inline(piece, users),
      ).join("");
      out.push(html.replace(/\n/g, "<br>"));
    });
    return out.join("");
  }

  function textObject(obj, users) {
    if (!obj) return "";
    return obj.type === "mrkdwn" ? mrkdwn(obj.text, users) : escapeHtml(obj.text || "");
  }

  function el(tag, cls, html) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (html !== undefined) e.innerHTML = html;
    return e;
  }

  function button(element, blockId, ctx) {
    const b = el("button", `bk-btn ${element.style || ""}`.trim(), textObject(element.text, ctx.users));
    b.type = "button";
    b.dataset.actionId = element.action_id;
    b.addEventListener("click", () => ctx.onAction(element, blockId, null, b));
    return b;
  }

  function select(element, blockId, ctx) {
    const s = el("select", "bk-select");
    s.dataset.actionId = element.action_id;
    const ph = el("option", "", escapeHtml((element.placeholder || {}).text || "Choose…"));
    ph.value = ""; ph.disabled = true; ph.selected = true;
    s.appendChild(ph);
    for (const o of element.options || []) {
      const opt = el("option", "", escapeHtml(o.text.text));
      opt.value = o.value;
      s.appendChild(opt);
    }
    s.addEventListener("change", () => ctx.onAction(element, blockId, s.value, s));
    return s;
  }

  function block(b, ctx) {
    switch (b.type) {
      case "header": return el("div", "bk-header", textObject(b.text, ctx.users));
      case "divider": return el("hr", "bk-divider");
      case "section": {
        const s = el("div", "bk-section");
        if (b.text) s.appendChild(el("div", "bk-text", textObject(b.text, ctx.users)));
        if (b.fields) {
          const grid = el("div", "bk-fields");
          for (const f of b.fields) grid.appendChild(el("div", "bk-field", textObject(f, ctx.users)));
          s.appendChild(grid);
        }
        return s;
      }
      case "context": {
        const c = el("div", "bk-context");
        for (const e of b.elements || []) {
          c.appendChild(e.type === "image" ? Object.assign(el("img", "bk-ctx-img"), { src: e.image_url, alt: e.alt_text })
            : el("span", "", textObject(e, ctx.users)));
        }
        return c;
      }
      case "actions": {
        const a = el("div", "bk-actions");
        for (const e of b.elements || []) {
          if (e.type === "button") a.appendChild(button(e, b.block_id, ctx));
          else if (e.type === "static_select") a.appendChild(select(e, b.block_id, ctx));
        }
        return a;
      }
      case "image": {
        const f = el("figure", "bk-image");
        f.appendChild(Object.assign(el("img"), { src: b.image_url, alt: b.alt_text || "" }));
        return f;
      }
      default: return el("div", "bk-unknown", escapeHtml(`[${b.type} block]`));
    }
  }

  function render(blocks, ctx) {
    const wrap = el("div", "bk");
    for (const b of blocks || []) wrap.appendChild(block(b, ctx));
    return wrap;
  }

  return { render, mrkdwn, escapeHtml };
})();
