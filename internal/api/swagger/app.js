// The API reference: renders the hub's OpenAPI 3.1 document
// (/swagger/openapi.json) as a page. Self-contained: no outside script,
// style or font; every text of the document goes in as text, never HTML.
"use strict";

(function () {
  var doc;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      if (arguments[i]) parent.appendChild(arguments[i]);
    }
    return parent;
  }

  // resolve follows a local $ref ("#/components/schemas/X") in the document.
  function resolve(obj) {
    var seen = 0;
    while (obj && typeof obj.$ref === "string" && seen++ < 16) {
      var parts = obj.$ref.replace(/^#\//, "").split("/");
      var cur = doc;
      for (var i = 0; i < parts.length && cur; i++) {
        cur = cur[parts[i].replace(/~1/g, "/").replace(/~0/g, "~")];
      }
      if (!cur) return obj;
      obj = cur;
    }
    return obj;
  }

  function refName(obj) {
    return obj && typeof obj.$ref === "string" ? obj.$ref.split("/").pop() : "";
  }

  // typeText says a schema's type in a few words.
  function typeText(s) {
    var name = refName(s);
    s = resolve(s) || {};
    if (name) return name;
    var t = s.type;
    if (Array.isArray(t)) t = t.join(" | ");
    if (t === "array" || (Array.isArray(s.type) && s.type.indexOf("array") >= 0)) {
      return String(t).replace("array", "array of " + (s.items ? typeText(s.items) : "any"));
    }
    if (!t && s.oneOf) return "one of " + s.oneOf.length;
    if (!t && s.anyOf) return "any of " + s.anyOf.length;
    if (!t && s.allOf) return "all of " + s.allOf.length;
    if (!t && s.properties) t = "object";
    if (s.format) t = (t || "") + " (" + s.format + ")";
    return t || "any";
  }

  function facts(s) {
    var out = [];
    if (s.enum) out.push("one of: " + s.enum.map(function (v) { return JSON.stringify(v); }).join(", "));
    if (s.const !== undefined) out.push("always " + JSON.stringify(s.const));
    if (s.default !== undefined) out.push("default " + JSON.stringify(s.default));
    ["minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern"].forEach(function (k) {
      if (s[k] !== undefined) out.push(k + " " + s[k]);
    });
    if (s.readOnly) out.push("read-only");
    if (s.deprecated) out.push("deprecated");
    return out.join("; ");
  }

  // schemaTree shows a schema: its type, and its parts (properties, items,
  // alternatives) inside a <details> filled the first time it opens, so a
  // schema that refers to itself costs nothing until looked at.
  function schemaTree(s, label, required) {
    var r = resolve(s) || {};
    var wrap = el("div", "schema");
    var head = el("span");
    if (label) add(head, el("span", "name", label), document.createTextNode(" "));
    add(head, el("span", "type", typeText(s)));
    if (required) add(head, el("span", "req", "required"));
    var f = facts(r);
    if (f) add(head, el("span", "note", " " + f));
    var kids = children(r);
    if (!kids.length) {
      add(wrap, head);
      if (r.description && !label) add(wrap, el("div", "description", r.description));
      return wrap;
    }
    var det = el("details");
    var sum = el("summary");
    add(sum, head);
    add(det, sum);
    det.addEventListener("toggle", function fill() {
      det.removeEventListener("toggle", fill);
      if (r.description) add(det, el("div", "description", r.description));
      kids.forEach(function (k) { add(det, k()); });
    });
    return add(wrap, det);
  }

  function children(r) {
    var out = [];
    var required = r.required || [];
    Object.keys(r.properties || {}).forEach(function (name) {
      out.push(function () {
        var p = r.properties[name];
        var row = el("div", "prop");
        add(row, schemaTree(p, name, required.indexOf(name) >= 0));
        var d = (resolve(p) || {}).description;
        if (d && !refName(p)) add(row, el("div", "description", d));
        return row;
      });
    });
    if (r.items) out.push(function () { return schemaTree(r.items, "items"); });
    if (r.additionalProperties && typeof r.additionalProperties === "object") {
      out.push(function () { return schemaTree(r.additionalProperties, "each value"); });
    }
    ["oneOf", "anyOf", "allOf"].forEach(function (k) {
      (r[k] || []).forEach(function (alt, i) {
        out.push(function () { return schemaTree(alt, k + " " + (i + 1)); });
      });
    });
    return out;
  }

  function parameters(op, pathItem) {
    var ps = (pathItem.parameters || []).concat(op.parameters || []).map(resolve);
    if (!ps.length) return null;
    var box = el("div");
    add(box, el("h3", null, "Parameters"));
    var t = el("table");
    var hr = el("tr");
    ["name", "in", "type", "description"].forEach(function (h) { add(hr, el("th", null, h)); });
    add(t, hr);
    ps.forEach(function (p) {
      var tr = el("tr");
      var name = el("td");
      add(name, el("code", null, p.name));
      if (p.required) add(name, el("span", "req", "required"));
      add(tr, name, el("td", null, p.in), add(el("td"), p.schema ? schemaTree(p.schema) : el("span", "type", "any")),
        el("td", "description", p.description || ""));
      add(t, tr);
    });
    return add(box, t);
  }

  function content(c) {
    var box = el("div");
    Object.keys(c || {}).forEach(function (type) {
      add(box, el("div", "note", type));
      if (c[type].schema) add(box, schemaTree(c[type].schema));
    });
    return box;
  }

  function requestBody(op) {
    if (!op.requestBody) return null;
    var b = resolve(op.requestBody);
    var box = el("div");
    add(box, el("h3", null, "Request body" + (b.required ? " (required)" : "")));
    if (b.description) add(box, el("div", "description", b.description));
    add(box, content(b.content));
    // What to send is what a reader came for: its first level is open.
    var first = box.querySelector("details");
    if (first) first.open = true;
    return box;
  }

  function responses(op) {
    var rs = op.responses || {};
    var box = el("div");
    add(box, el("h3", null, "Responses"));
    var t = el("table");
    Object.keys(rs).sort().forEach(function (code) {
      var r = resolve(rs[code]) || {};
      var tr = el("tr");
      var cell = el("td");
      if (r.description) add(cell, el("div", "description", r.description));
      if (r.content) add(cell, content(r.content));
      Object.keys(r.headers || {}).forEach(function (h) {
        var hd = resolve(r.headers[h]) || {};
        add(cell, add(el("div", "note"), el("code", null, h), document.createTextNode(" " + (hd.description || ""))));
      });
      add(tr, el("td", "status", code), cell);
      add(t, tr);
    });
    return add(box, t);
  }

  function operation(path, method, op, pathItem) {
    var det = el("details", "op");
    det.dataset.search = (method + " " + path + " " + (op.summary || "") + " " + (op.operationId || "")).toLowerCase();
    var sum = el("summary");
    add(sum, el("span", "method m-" + method, method), el("span", "path", path), el("span", "summary", op.summary || ""),
      el("span", "opid", op.operationId || ""));
    add(det, sum);
    det.addEventListener("toggle", function fill() {
      det.removeEventListener("toggle", fill);
      var body = el("div", "body");
      if (op.description) add(body, el("div", "description", op.description));
      add(body, parameters(op, pathItem), requestBody(op), responses(op));
      add(det, body);
    });
    return det;
  }

  // group is the section an operation is listed under: the path's first
  // segment after the version ("subscriptions", "admin"), else "service".
  function group(path) {
    var m = /^\/v\d+\/([^\/{.]+)(\/|$)/.exec(path);
    return m ? m[1] : "service";
  }

  function render() {
    var main = document.getElementById("doc");
    main.textContent = "";
    var info = doc.info || {};
    document.getElementById("title").textContent = (info.title || "API") + " API reference";
    document.title = document.getElementById("title").textContent;
    document.getElementById("version").textContent = "version " + (info.version || "?") + " · OpenAPI " + (doc.openapi || "?");
    if (info.description) add(main, el("p", "description", info.description));
    var schemes = (doc.components || {}).securitySchemes || {};
    Object.keys(schemes).forEach(function (k) {
      var p = el("p", "description");
      add(p, el("strong", null, "Authentication (" + k + "): "), document.createTextNode(schemes[k].description || schemes[k].scheme || ""));
      add(main, p);
    });
    var groups = {};
    var order = [];
    Object.keys(doc.paths || {}).forEach(function (path) {
      var item = doc.paths[path];
      ["get", "post", "put", "patch", "delete"].forEach(function (m) {
        if (!item[m]) return;
        var g = group(path);
        if (!groups[g]) { groups[g] = []; order.push(g); }
        groups[g].push(operation(path, m, item[m], item));
      });
    });
    order.forEach(function (g) {
      var sec = el("section");
      sec.dataset.group = g;
      add(sec, el("h2", null, g));
      groups[g].forEach(function (op) { add(sec, op); });
      add(main, sec);
    });
  }

  function filter(q) {
    q = q.trim().toLowerCase();
    document.querySelectorAll("section").forEach(function (sec) {
      var any = false;
      sec.querySelectorAll("details.op").forEach(function (op) {
        var show = !q || op.dataset.search.indexOf(q) >= 0;
        op.classList.toggle("hidden", !show);
        any = any || show;
      });
      sec.classList.toggle("hidden", !any);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.getElementById("filter").addEventListener("input", function (e) { filter(e.target.value); });
    // From the origin, not the page's URL: a page opened with user and
    // token written into its URL keeps them there, and fetch refuses to
    // resolve against such a URL; the browser still sends them.
    fetch(location.origin + "/swagger/openapi.json", { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error("GET /swagger/openapi.json: " + r.status);
      return r.json();
    }).then(function (d) {
      doc = d;
      render();
      if (location.hash) {
        var q = decodeURIComponent(location.hash.slice(1));
        document.getElementById("filter").value = q;
        filter(q);
        // A link to one operation (#createSubscription) opens it.
        var shown = document.querySelectorAll("details.op:not(.hidden)");
        if (shown.length === 1) shown[0].open = true;
      }
    }).catch(function (err) {
      var main = document.getElementById("doc");
      main.textContent = "";
      add(main, el("p", "note", String(err.message || err)));
    });
  });
})();
