// GeoHub search page. Everything shown comes from strangers' servers: it is inserted as text (textContent,
// never innerHTML), and only http(s) addresses become links.
"use strict";

(function () {
  const PAGE_SIZE = 20;
  const $ = (id) => document.getElementById(id);

  // --- DOM helpers -----------------------------------------------------------------------------------------

  // An element with attributes and children; strings become text nodes.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) node.setAttribute(name, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  // A link for http(s) addresses only (no javascript: or data: URLs); anything else stays text.
  function link(url, text) {
    if (typeof url !== "string" || !/^https?:\/\//i.test(url)) return document.createTextNode(text || url || "");
    return el("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, text || url);
  }

  function setStatus(text, isError) {
    const status = $("status");
    status.textContent = text;
    status.classList.toggle("error", Boolean(isError));
  }

  // --- API -------------------------------------------------------------------------------------------------

  async function api(path) {
    const response = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (response.status === 401) throw new Error("Your Airflow login has expired: reload the page to log in.");
    if (!response.ok) {
      let detail = response.statusText;
      try {
        const body = await response.json();
        detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
      } catch (ignored) {
        // not JSON: keep the status text
      }
      throw new Error(`${response.status}: ${detail}`);
    }
    return response.json();
  }

  // --- map -------------------------------------------------------------------------------------------------

  const map = L.map("map", { worldCopyJump: true, minZoom: 1 }).setView([20, 0], 2);
  map.attributionControl.addAttribution("Natural Earth");
  const footprintStyle = { color: "#2f6fdb", weight: 1, fillOpacity: 0.08 };
  const selectedStyle = { color: "#d9480f", weight: 2, fillOpacity: 0.15 };
  const results = L.geoJSON(null, {
    style: () => footprintStyle,
    pointToLayer: (feature, latlng) => L.circleMarker(latlng, { radius: 5 }),
  }).addTo(map);
  const datasets = L.geoJSON(null, {
    style: () => selectedStyle,
    pointToLayer: (feature, latlng) => L.circleMarker(latlng, { radius: 4, color: selectedStyle.color }),
  }).addTo(map);

  api("static/world.geojson")
    .then((world) => {
      L.geoJSON(world, {
        interactive: false,
        style: { color: "#9aa5b1", weight: 0.7, fillColor: "#fdfdf8", fillOpacity: 1 },
      }).addTo(map).bringToBack();
    })
    .catch((error) => setStatus(`Base map: ${error.message}`, true));

  function wrapLongitude(x) {
    return x >= -180 && x <= 180 ? x : ((((x + 180) % 360) + 360) % 360) - 180;
  }

  // The visible area as west,south,east,north in degrees; west > east when it crosses the antimeridian.
  function visibleBox() {
    const b = map.getBounds();
    const round = (x) => Math.round(x * 1e5) / 1e5;
    const south = Math.max(-90, b.getSouth());
    const north = Math.min(90, b.getNorth());
    if (b.getEast() - b.getWest() >= 360) return [-180, south, 180, north].map(round);
    return [wrapLongitude(b.getWest()), south, wrapLongitude(b.getEast()), north].map(round);
  }

  // --- search ----------------------------------------------------------------------------------------------

  let offset = 0;
  let withoutFootprint = false; // showing the matches no map area finds
  let staleResults = false; // the map moved while a detail was open: search again on going back
  let searchNumber = 0; // answers to older searches are dropped
  const conceptLabels = new Map(); // concept id -> label, from api/concepts

  // The filters as the API and the page's address both name them: q, type (repeated), run, level, concept,
  // answering=true, footprint=none.
  function filterParams() {
    const params = new URLSearchParams();
    const text = $("q").value.trim();
    if (text) params.set("q", text);
    for (const box of document.querySelectorAll("#types input:checked")) params.append("type", box.value);
    for (const id of ["run", "level", "concept"]) if ($(id).value) params.set(id, $(id).value);
    if ($("answering").checked) params.set("answering", "true");
    if (withoutFootprint) params.set("footprint", "none");
    return params;
  }

  function searchParams() {
    const params = filterParams();
    if (!withoutFootprint && $("in-view").checked) params.set("bbox", visibleBox().join(","));
    params.set("limit", PAGE_SIZE);
    params.set("offset", offset);
    return params;
  }

  async function runSearch() {
    const number = ++searchNumber;
    setStatus("Searching…");
    try {
      const page = await api(`api/search?${searchParams()}`);
      if (number !== searchNumber) return;
      showResults(page);
    } catch (error) {
      if (number === searchNumber) setStatus(error.message, true);
    }
  }

  function search(fromStart) {
    if (fromStart) offset = 0;
    showDetail(false);
    rememberInAddress();
    runSearch();
  }

  // The search in the page's address, so that it can be bookmarked and shared and Back returns to it.
  function rememberInAddress() {
    const address = filterParams();
    if (!$("in-view").checked) address.set("in_view", "false");
    if (offset) address.set("offset", String(offset));
    const query = address.toString();
    if (query !== location.search.slice(1)) history.pushState(null, "", query ? `?${query}` : location.pathname);
  }

  function showResults(page) {
    const hits = $("hits");
    hits.replaceChildren();
    results.clearLayers();
    for (const hit of page.results) {
      const item = hitItem(hit);
      hits.append(item);
      if (hit.footprint) {
        const shape = L.geoJSON(hit.footprint, {
          style: () => footprintStyle,
          pointToLayer: (feature, latlng) => L.circleMarker(latlng, { radius: 5 }),
        });
        // an element, not a string: Leaflet would set a string as HTML
        shape.bindTooltip(el("span", null, hit.title || hit.url), { sticky: true });
        shape.on("click", () => openDetail(hit.id));
        results.addLayer(shape);
      }
    }
    const first = page.offset + 1;
    const last = page.offset + page.results.length;
    const where = withoutFootprint ? " without a footprint" : $("in-view").checked ? " in the map area" : "";
    const found = page.results.length ? `Results ${first}–${last} of ${page.total}${where}` : `Nothing found${where}.`;
    const leftOut = [];
    if (page.outside_box) leftOut.push(`${page.outside_box} outside the map area`);
    if (page.no_footprint && !withoutFootprint) leftOut.push(`${page.no_footprint} without a footprint`);
    setStatus(leftOut.length ? `${found} · ${leftOut.join(", ")}` : found);
    $("without-footprint").hidden = !page.no_footprint && !withoutFootprint;
    $("without-footprint").textContent = withoutFootprint ? "Back to the map area" :
      `Show the ${page.no_footprint} without a footprint`;
    showFacets(page.facets, page.facets_estimated);
    $("previous").disabled = page.offset === 0;
    $("next").disabled = page.next_offset === null;
  }

  // The filters' counts follow the search: each says how many of its matches a choice keeps. Counted on a
  // sample when there are many matches (the API says so): "about" each.
  function showFacets(facets, estimated) {
    const count = (n) => (estimated && n ? `about ${n}` : `${n}`);
    const types = new Map(facets.type.map((t) => [t.value, t.resources]));
    for (const label of document.querySelectorAll("#types label")) {
      const box = label.querySelector("input");
      label.lastChild.textContent = ` ${box.value} (${count(types.get(box.value) || 0)})`;
    }
    const concepts = new Map(facets.concept.map((c) => [c.id, c.resources]));
    for (const option of $("concept").options) {
      if (option.value) option.textContent = `${conceptLabels.get(option.value) || option.value} (${count(concepts.get(option.value) || 0)})`;
    }
    const chosen = $("level").value;
    const levels = facets.level.map((l) => l.level);
    if (chosen && !levels.includes(Number(chosen))) levels.push(Number(chosen));
    const counts = new Map(facets.level.map((l) => [l.level, l.resources]));
    $("level").replaceChildren(el("option", { value: "" }, "any"),
      ...levels.sort((a, b) => a - b).map((level) =>
        el("option", { value: String(level) }, `${level} (${count(counts.get(level) || 0)})`)));
    $("level").value = chosen;
  }

  const FILE_TYPES = new Set(["KML", "SHAPEFILE", "GEOJSON", "GEOTIFF"]);
  const OGC_TYPES = new Set(["WMS", "WFS", "WCS", "WMTS", "WPS", "SOS", "CSW"]);

  const STATUS_TITLES = {
    failed: "its last check failed",
    dead: "it failed its checks many times in a row: kept, and checked again now and then",
  };

  function documentLabel(type) {
    if (FILE_TYPES.has(type)) return "File";
    return OGC_TYPES.has(type) ? "Capabilities" : "Endpoint"; // an OGC API, STAC or ArcGIS REST root
  }

  function hitItem(hit) {
    const title = el("button", { type: "button", class: "title" }, hit.title || hit.url);
    title.addEventListener("click", () => openDetail(hit.id));
    const datasetsText = `${hit.datasets} dataset${hit.datasets === 1 ? "" : "s"}`;
    return el(
      "li",
      { "data-id": String(hit.id) },
      el("div", null, el("span", { class: "type" }, hit.type), title,
        hit.status === "ok" ? null : el("span", { class: `status ${hit.status}`, title: STATUS_TITLES[hit.status] },
          hit.status)),
      el("div", { class: "url" }, link(hit.url)),
      el(
        "div",
        { class: "meta" },
        datasetsText,
        hit.capabilities_url ? link(hit.capabilities_url, documentLabel(hit.type)) : null,
        hit.provider ? ` · ${hit.provider}` : null,
      ),
      hit.concepts.length ? el("div", { class: "concepts" },
        `About: ${hit.concepts.map((c) => conceptLabels.get(c) || c).join(", ")}`) : null,
      hit.abstract ? el("p", { class: "abstract" }, hit.abstract) : null,
    );
  }

  // --- detail ----------------------------------------------------------------------------------------------

  function showDetail(visible) {
    $("detail").hidden = !visible;
    $("results").hidden = visible;
    if (!visible) datasets.clearLayers();
    if (visible) staleResults = false;
  }

  function boxText(geometry) {
    if (!geometry) return "";
    const bounds = L.geoJSON(geometry).getBounds();
    return [bounds.getWest(), bounds.getSouth(), bounds.getEast(), bounds.getNorth()].map((x) => x.toFixed(2)).join(" ");
  }

  async function openDetail(id) {
    setStatus("Loading…");
    let resource;
    try {
      resource = await api(`api/resources/${encodeURIComponent(id)}`);
    } catch (error) {
      setStatus(error.message, true);
      return;
    }
    for (const item of document.querySelectorAll("#hits li")) item.classList.toggle("selected", item.dataset.id === String(id));
    $("detail-title").textContent = resource.title || resource.url;
    const fields = [
      ["Type", `${resource.type}${resource.version ? " " + resource.version : ""}`],
      ["URL", link(resource.url)],
      ["Capabilities", resource.capabilities_url ? link(resource.capabilities_url) : null],
      ["Provider", resource.provider],
      ["Abstract", resource.abstract],
      ["Keywords", resource.keywords.join(", ")],
      ["Found on", resource.source_page ? link(resource.source_page) : null],
      ["Search keyword", resource.keyword],
      ["Level", resource.level === null ? null : String(resource.level)],
      ["Runs", resource.runs.map((r) => `${r.run_id} (level ${r.level})`).join(", ")],
      ["First seen", resource.first_seen],
      ["Last seen", resource.last_seen],
    ];
    $("detail-fields").replaceChildren(
      ...fields.filter(([, value]) => value).flatMap(([name, value]) => [el("dt", null, name), el("dd", null, value)]),
    );
    const shown = resource.datasets.length;
    $("datasets-heading").textContent = shown === resource.datasets_total ? `Datasets (${shown})` :
      `Datasets (first ${shown} of ${resource.datasets_total})`;
    const rows = resource.datasets.map((d) =>
      el("tr", null, el("td", null, String(d.position + 1)), el("td", null, d.name || ""), el("td", null, d.title || ""),
        el("td", null, d.keywords.join(", ")),
        el("td", { class: "concepts" }, d.concepts.map((c) => conceptLabels.get(c) || c).join(", ")),
        el("td", null, boxText(d.footprint))));
    $("datasets").tBodies[0].replaceChildren(...rows);
    datasets.clearLayers();
    for (const d of resource.datasets) if (d.footprint) datasets.addData(d.footprint);
    if (!resource.datasets.some((d) => d.footprint) && resource.bbox) datasets.addData(resource.bbox);
    showDetail(true);
    setStatus("");
    const bounds = datasets.getBounds();
    if (bounds.isValid()) map.fitBounds(bounds, { padding: [24, 24], maxZoom: 12 });
  }

  // --- filters ---------------------------------------------------------------------------------------------

  async function loadFilters() {
    const [types, runs, concepts] = await Promise.all([api("api/types"), api("api/runs"), api("api/concepts")]);
    $("types").replaceChildren(
      ...types.map((t) => {
        const box = el("input", { type: "checkbox", value: t.type });
        box.addEventListener("change", () => search(true));
        return el("label", null, box, ` ${t.type} (${t.resources})`);
      }),
    );
    for (const run of runs) $("run").append(el("option", { value: run.run_id }, `${run.run_id} (${run.resources})`));
    for (const c of concepts) {
      conceptLabels.set(c.id, c.label);
      $("concept").append(el("option", { value: c.id }, `${c.label} (${c.resources})`));
    }
  }

  // --- wiring ----------------------------------------------------------------------------------------------

  let moveTimer = null;
  map.on("moveend", () => {
    if (!$("in-view").checked || withoutFootprint) return;
    if (!$("detail").hidden) {
      staleResults = true; // the detail stays open; its results follow the map on going back
      return;
    }
    clearTimeout(moveTimer);
    moveTimer = setTimeout(() => search(true), 250);
  });
  $("search").addEventListener("submit", (event) => {
    event.preventDefault();
    search(true);
  });
  for (const id of ["run", "level", "concept", "in-view", "answering"]) {
    $(id).addEventListener("change", () => search(true));
  }
  $("previous").addEventListener("click", () => {
    offset = Math.max(0, offset - PAGE_SIZE);
    search(false);
  });
  $("next").addEventListener("click", () => {
    offset += PAGE_SIZE;
    search(false);
  });
  $("back").addEventListener("click", () => {
    showDetail(false);
    if (staleResults) search(true);
  });
  $("without-footprint").addEventListener("click", () => {
    withoutFootprint = !withoutFootprint;
    search(true);
  });
  window.addEventListener("popstate", () => {
    applyAddress();
    showDetail(false);
    runSearch();
  });

  // A link into GeoHub (a run's report, a shared search) names its filters in the address:
  // q, type (repeated), run, level, concept, answering=true, in_view=false, footprint=none, offset.
  function applyAddress() {
    const address = new URLSearchParams(location.search);
    if (address.has("q")) $("q").value = address.get("q");
    const types = new Set(address.getAll("type"));
    for (const box of document.querySelectorAll("#types input")) box.checked = types.has(box.value);
    const run = address.get("run");
    if (run && ![...$("run").options].some((o) => o.value === run)) $("run").append(el("option", { value: run }, run));
    const level = address.get("level");
    if (level && ![...$("level").options].some((o) => o.value === level)) $("level").append(el("option", { value: level }, level));
    for (const id of ["run", "level", "concept"]) $(id).value = address.get(id) || "";
    $("answering").checked = address.get("answering") === "true";
    $("in-view").checked = address.get("in_view") !== "false";
    withoutFootprint = address.get("footprint") === "none";
    offset = Math.max(0, Number.parseInt(address.get("offset") || "0", 10) || 0);
  }

  loadFilters()
    .then(applyAddress)
    .catch((error) => setStatus(error.message, true))
    .finally(() => runSearch());
})();
