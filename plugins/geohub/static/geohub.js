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
  // The world's outline under everything (in place of tiles), a WMS preview over the footprints.
  map.createPane("base").style.zIndex = 150;
  map.createPane("preview").style.zIndex = 450;
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
        pane: "base",
        interactive: false,
        style: { color: "#9aa5b1", weight: 0.7, fillColor: "#fdfdf8", fillOpacity: 1 },
      }).addTo(map);
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
  const FILTERS = ["run", "level", "concept", "provider", "min_availability"]; // the menus among the filters
  const CHECK_BOXES = [["types", "type"], ["conformance", "conformance"], ["inspire", "inspire"]]; // id, parameter

  // The filters as the API and the page's address both name them: q, type (repeated), run, level, concept,
  // provider, min_availability, answering=true, footprint=none, conformance and inspire (repeated).
  function filterParams() {
    const params = new URLSearchParams();
    const text = $("q").value.trim();
    if (text) params.set("q", text);
    for (const [id, name] of CHECK_BOXES) {
      for (const box of document.querySelectorAll(`#${id} input:checked`)) params.append(name, box.value);
    }
    for (const id of FILTERS) if ($(id).value) params.set(id, $(id).value);
    if ($("answering").checked) params.set("answering", "true");
    if (withoutFootprint) params.set("footprint", "none");
    return params;
  }

  // The filters of the results shown: with the map area's box when it filters them.
  function shownParams() {
    const params = filterParams();
    if (!withoutFootprint && $("in-view").checked) params.set("bbox", visibleBox().join(","));
    return params;
  }

  function searchParams() {
    const params = shownParams();
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
        shape.bindTooltip(el("span", null, displayTitle(hit)), { sticky: true });
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
    exportLink();
    $("previous").disabled = page.offset === 0;
    $("next").disabled = page.next_offset === null;
  }

  // The filters' counts follow the search: each says how many of its matches a choice keeps. Counted on a
  // sample when there are many matches (the API says so): "about" each.
  function showFacets(facets, estimated) {
    const count = (n) => (estimated && n ? `about ${n}` : `${n}`);
    for (const [id, facet] of [["types", facets.type], ["conformance", facets.conformance], ["inspire", facets.inspire]]) {
      const counts = new Map(facet.map((f) => [f.value, f.resources]));
      for (const label of document.querySelectorAll(`#${id} label`)) {
        const box = label.querySelector("input");
        label.lastChild.textContent = ` ${box.value} (${count(counts.get(box.value) || 0)})`;
      }
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
    const provider = $("provider").value;
    const providers = facets.provider.map((p) => [p.value, p.resources]);
    if (provider && !providers.some(([value]) => value === provider)) providers.push([provider, 0]);
    $("provider").replaceChildren(el("option", { value: "" }, "any"),
      ...providers.map(([value, n]) => el("option", { value }, `${value} (${count(n)})`)));
    $("provider").value = provider;
  }

  // The export of what the results show (every page of them, up to the server's limit) in the chosen format,
  // or the QGIS connections of its services of one kind.
  function exportLink() {
    const params = shownParams();
    const [format, kind] = $("export-format").value.split(":");
    if (kind) params.set("service", kind);
    else params.set("format", format);
    $("export").href = `${kind ? "api/qgis-connections.xml" : "api/export"}?${params}`;
  }

  const FILE_TYPES = new Set(["KML", "SHAPEFILE", "GEOJSON", "GEOTIFF"]);
  const OGC_TYPES = new Set(["WMS", "WFS", "WCS", "WMTS", "WPS", "SOS", "CSW"]);

  // The INSPIRE view-service verdicts of a WMS on both criteria (availability and GetMap performance).
  const INSPIRE_VERDICTS = {
    met: "both INSPIRE view-service criteria met: availability and GetMap performance",
    "not met": "an INSPIRE view-service criterion not met",
    "not enough checks": "too few checks in 30 days to judge (24 needed)",
  };

  const STATUS_TITLES = {
    failed: "its last check failed",
    dead: "it failed its checks many times in a row: kept, and checked again now and then",
  };

  // How well an OGC service's capabilities follow its standard. A conformant one gets no badge, as a service
  // that answers gets none: only what may need a second look is marked.
  const CONFORMANCE_TITLES = {
    conformant: "OWSLib reads its capabilities whole and found no defect",
    readable: "its capabilities were read despite defects",
    identified: "only its type and version could be read from its capabilities",
  };

  function conformanceBadge(resource) {
    if (!resource.conformance || resource.conformance === "conformant") return null;
    const defects = resource.defects.length ? `: ${resource.defects.join("; ")}` : "";
    return el("span", { class: `conformance ${resource.conformance}`,
      title: `${CONFORMANCE_TITLES[resource.conformance] || ""}${defects}` }, resource.conformance);
  }

  // How a resource answered its checks of the last 30 days, as of its last check: a badge on every result,
  // green from 99 % (INSPIRE's availability share), amber from 90 %, red below; the rules in its tooltip.
  const INSPIRE_RULES = {
    availability: "INSPIRE view service availability (at least 99 % of the checks of 30 days, judged on 24 or more)",
    getmap: "INSPIRE view service performance (GetMap first byte within 5 s in 90 % of GetMap checks, judged on 24 or more)",
  };

  function percentText(percent) {
    return `${Number(Number(percent).toFixed(1))} %`;
  }

  function secondsText(seconds) {
    return seconds < 0.1 ? "< 0.1 s" : `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
  }

  function availabilityClass(percent) {
    if (percent >= 99) return "good";
    return percent >= 90 ? "fair" : "poor";
  }

  function qualityBadge(quality) {
    if (!quality.checks_30d) {
      return el("span", { class: "quality none", title: "not checked by the revisits in the last 30 days" }, "no checks");
    }
    const percent = quality.availability_30d_percent;
    const time = quality.response_median_seconds;
    const lines = [`${percentText(percent)} of ${quality.checks_30d} checks over 30 days succeeded` +
      (time === null ? "" : `; median response ${time} s`)];
    if (quality.inspire) {
      lines.push(`${INSPIRE_RULES.availability}: ${quality.inspire_availability}`,
        `${INSPIRE_RULES.getmap}: ${quality.inspire_getmap}`);
    }
    return el("span", { class: `quality ${availabilityClass(percent)}`, title: lines.join("\n") },
      time === null ? percentText(percent) : `${percentText(percent)} · ${secondsText(time)}`);
  }

  function documentLabel(type) {
    if (FILE_TYPES.has(type)) return "File";
    return OGC_TYPES.has(type) ? "Capabilities" : "Endpoint"; // an OGC API, STAC or ArcGIS REST root
  }

  // What a resource is called: its title; for a file without one, its file name (the URL's last path segment,
  // decoded), not the whole URL.
  function displayTitle(resource) {
    return resource.title || (FILE_TYPES.has(resource.type) && fileName(resource.url)) || resource.url;
  }

  function fileName(url) {
    if (!/^https?:\/\//i.test(url)) return null;
    try {
      const name = new URL(url).pathname.split("/").filter(Boolean).pop();
      return name ? decodeURIComponent(name) : null;
    } catch (ignored) {
      return null; // not a URL, or not valid percent-encoding: the URL as it is
    }
  }

  function hitItem(hit) {
    const title = el("button", { type: "button", class: "title" }, displayTitle(hit));
    title.addEventListener("click", () => openDetail(hit.id));
    const datasetsText = `${hit.datasets} dataset${hit.datasets === 1 ? "" : "s"}`;
    return el(
      "li",
      { "data-id": String(hit.id) },
      el("div", null, el("span", { class: "type" }, hit.type), title,
        hit.status === "ok" ? null : el("span", { class: `status ${hit.status}`, title: STATUS_TITLES[hit.status] },
          hit.status), conformanceBadge(hit), qualityBadge(hit.quality)),
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
    if (!visible) {
      datasets.clearLayers();
      removePreview();
    }
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
    let checks;
    try {
      const path = `api/resources/${encodeURIComponent(id)}`;
      [resource, checks] = await Promise.all([api(path), api(`${path}/checks`)]);
    } catch (error) {
      setStatus(error.message, true);
      return;
    }
    for (const item of document.querySelectorAll("#hits li")) item.classList.toggle("selected", item.dataset.id === String(id));
    $("detail-title").textContent = displayTitle(resource);
    const fields = [
      ["Type", `${resource.type}${resource.version ? " " + resource.version : ""}`],
      ["URL", link(resource.url)],
      ["Capabilities", resource.capabilities_url ? link(resource.capabilities_url) : null],
      ["Provider", resource.provider],
      ["File", FILE_TYPES.has(resource.type) ? fileFacts(resource.extra) : null],
      ["Abstract", resource.abstract],
      ["Keywords", resource.keywords.join(", ")],
      ["Found on", resource.source_page ? link(resource.source_page) : null],
      ["Search keyword", resource.keyword],
      ["Level", resource.level === null ? null : String(resource.level)],
      ["Conformance", resource.conformance && `${resource.conformance}: ${CONFORMANCE_TITLES[resource.conformance]}`],
      ["Defects", resource.defects.length ? el("ul", { class: "defects" },
        ...resource.defects.map((defect) => el("li", null, defect))) : null],
      ["OWSLib", resource.owslib_error],
      ...qualityFields(resource.quality),
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
    const connectable = SERVICE_KINDS.has(resource.type);
    const rows = resource.datasets.map((d) =>
      el("tr", null, el("td", null, String(d.position + 1)),
        el("td", { class: "name" }, el("code", null, d.name || ""),
          d.name && connectable ? copyButton(d.name, "Copy the name") : null),
        el("td", null, d.title || ""),
        el("td", null, d.keywords.join(", ")),
        el("td", { class: "concepts" }, d.concepts.map((c) => conceptLabels.get(c) || c).join(", ")),
        el("td", null, FILE_TYPES.has(resource.type) ? fileFacts(d.extra) : ""),
        el("td", null, boxText(d.footprint))));
    $("datasets").tBodies[0].replaceChildren(...rows);
    showServiceTools(resource);
    drawChecks(checks);
    datasets.clearLayers();
    for (const d of resource.datasets) if (d.footprint) datasets.addData(d.footprint);
    if (!resource.datasets.some((d) => d.footprint) && resource.bbox) datasets.addData(resource.bbox);
    showDetail(true);
    setStatus("");
    const bounds = datasets.getBounds();
    if (bounds.isValid()) map.fitBounds(bounds, { padding: [24, 24], maxZoom: 12 });
  }

  // --- quality: the figures and the checks over time -----------------------------------------------------

  function qualityFields(quality) {
    const availability = (checks, percent, days) =>
      checks ? `${percentText(percent)} of ${checks} checks over ${days} days succeeded` : `no checks in ${days} days`;
    const times = Object.entries(quality.operations_30d).map(([operation, o]) => o.total_median === null ?
      `${operation}: no answer` : `${operation}: median ${o.total_median} s, 95th percentile ${o.total_p95} s ` +
      `(first byte ${o.first_byte_median} s) over ${o.successes} answers`);
    const verdict = (value, rule) => value && el("span", null, el("strong", { class: "verdict" }, value), ` · ${rule}`);
    return [
      ["Availability", `${availability(quality.checks_30d, quality.availability_30d_percent, 30)}; ` +
        availability(quality.checks_7d, quality.availability_7d_percent, 7)],
      ["Response times", times.length ? el("ul", { class: "times" }, ...times.map((t) => el("li", null, t))) : null],
      ["Last success", quality.last_success_at],
      ["INSPIRE availability", verdict(quality.inspire_availability, quality.inspire_availability_rule)],
      ["INSPIRE performance", verdict(quality.inspire_getmap, quality.inspire_getmap_rule)],
    ];
  }

  const SVG = "http://www.w3.org/2000/svg";
  const CHART = { width: 560, height: 150, left: 44, right: 8, top: 10, bottom: 22 };

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
    node.append(...children);
    return node;
  }

  // The total time of each check over the last 30 days, one line per operation; a failed check is a red
  // mark on the time axis (it has no time). Drawn as SVG elements, never as markup.
  function drawChecks(checks) {
    $("checks-heading").textContent = checks.length ? `Checks in the last 30 days (${checks.length})` :
      "No checks in the last 30 days";
    $("checks-chart").hidden = !checks.length;
    if (!checks.length) return;
    const times = checks.map((c) => Date.parse(c.checked_at));
    const [start, end] = [Math.min(...times), Math.max(...times)];
    const slowest = Math.max(0.1, ...checks.map((c) => c.total_seconds || 0));
    const { width, height, left, right, top, bottom } = CHART;
    const x = (t) => left + (end === start ? 0.5 : (t - start) / (end - start)) * (width - left - right);
    const y = (s) => height - bottom - (s / slowest) * (height - top - bottom);
    const operations = [...new Set(checks.map((c) => c.operation))];
    const lines = operations.map((operation, i) => {
      const points = checks.map((c, k) => [c, times[k]]).filter(([c]) => c.operation === operation && c.total_seconds !== null);
      return svg("g", { class: `series series-${i}`, "data-operation": operation },
        svg("polyline", { points: points.map(([c, t]) => `${x(t).toFixed(1)},${y(c.total_seconds).toFixed(1)}`).join(" ") }),
        ...points.map(([c, t]) => svg("circle", { cx: x(t).toFixed(1), cy: y(c.total_seconds).toFixed(1), r: 2 },
          svg("title", {}, `${c.checked_at} ${operation}: ${c.total_seconds} s`))));
    });
    const failures = checks.map((c, k) => [c, times[k]]).filter(([c]) => c.outcome === "failed").map(([c, t]) =>
      svg("line", { class: "failed", x1: x(t), x2: x(t), y1: height - bottom, y2: height - bottom - 8 },
        svg("title", {}, `${c.checked_at} ${c.operation}: failed`)));
    const day = (t) => new Date(t).toISOString().slice(0, 10);
    $("checks-chart").replaceChildren(
      svg("line", { class: "axis", x1: left, x2: width - right, y1: height - bottom, y2: height - bottom }),
      svg("line", { class: "axis", x1: left, x2: left, y1: top, y2: height - bottom }),
      svg("text", { x: left - 4, y: top + 8, "text-anchor": "end" }, secondsText(slowest)),
      svg("text", { x: left - 4, y: height - bottom, "text-anchor": "end" }, "0 s"),
      svg("text", { x: left, y: height - 6 }, day(start)),
      svg("text", { x: width - right, y: height - 6, "text-anchor": "end" }, day(end)),
      ...lines, ...failures);
    $("checks-legend").replaceChildren(...operations.map((operation, i) =>
      el("span", { class: `legend series-${i}` }, operation)), el("span", { class: "legend failed" }, "failed"));
  }

  // --- what a file holds ----------------------------------------------------------------------------------

  const SIZE_UNITS = ["bytes", "KB", "MB", "GB"];

  function sizeText(bytes) {
    let value = bytes;
    let unit = 0;
    while (value >= 1000 && unit < SIZE_UNITS.length - 1) {
      value /= 1000;
      unit += 1;
    }
    return unit ? `${value.toFixed(1)} ${SIZE_UNITS[unit]}` : `${bytes} bytes`;
  }

  // What the detectors read of a file or of one of its datasets (KML placemarks, a shapefile's features,
  // geometry type and CRS, a GeoTIFF's size and layout, a GeoJSON's features), as one line of text.
  function fileFacts(extra) {
    if (!extra || typeof extra !== "object") return "";
    const facts = [];
    const count = (n, word) => (Number.isInteger(n) ? `${n} ${word}${n === 1 ? "" : "s"}` : null);
    facts.push(count(extra.features, "feature"), count(extra.placemarks, "placemark"));
    if (typeof extra.geometry_type === "string") facts.push(extra.geometry_type);
    if (Array.isArray(extra.geometry_types)) facts.push(extra.geometry_types.join(", "));
    if (Number.isInteger(extra.width) && Number.isInteger(extra.height)) facts.push(`${extra.width} × ${extra.height} pixels`);
    if (typeof extra.crs === "string") facts.push(extra.crs);
    if (typeof extra.layout === "string") facts.push(extra.layout);
    facts.push(count(extra.overviews, "overview"));
    if (extra.cog_like === true) facts.push("cloud-optimised");
    if (extra.bigtiff === true) facts.push("BigTIFF");
    if (typeof extra.format === "string") facts.push(extra.format.toUpperCase());
    if (Number.isInteger(extra.archive_bytes)) facts.push(sizeText(extra.archive_bytes));
    return facts.filter((f) => f).join(" · ");
  }

  // --- services: endpoint, QGIS connection, WMS preview ------------------------------------------------------

  const SERVICE_KINDS = new Set(["WMS", "WMTS", "WFS", "WCS"]); // what QGIS connects to (api/.../qgis-connection.xml)
  const COPIED_MS = 2000;

  // A button copying text to the clipboard; it says whether that worked ("Copied", or how to copy by hand).
  function copyButton(text, label) {
    const button = el("button", { type: "button", class: "copy", title: label, "data-copy": text }, "Copy");
    button.addEventListener("click", () => copyText(button, text));
    return button;
  }

  async function copyText(button, text) {
    try {
      await navigator.clipboard.writeText(text); // only in a secure context (https, or localhost)
      button.textContent = "Copied";
      button.dataset.copied = "true";
    } catch (error) {
      button.textContent = "Copy failed: select the text";
      button.dataset.copied = "false";
    }
    setTimeout(() => {
      button.textContent = "Copy";
      delete button.dataset.copied;
    }, COPIED_MS);
  }

  function showServiceTools(resource) {
    // the address to paste elsewhere: a service's capabilities, an API's root, a file (none if not http(s))
    const endpoint = resource.capabilities_url;
    $("service-tools").hidden = !endpoint;
    $("endpoint").textContent = endpoint || "";
    $("copy-endpoint").dataset.copy = endpoint || "";
    const connectable = SERVICE_KINDS.has(resource.type);
    $("qgis-connection").parentElement.hidden = !connectable;
    if (connectable) $("qgis-connection").href = `api/resources/${encodeURIComponent(resource.id)}/qgis-connection.xml`;
    const layers = resource.type === "WMS" && endpoint ? resource.datasets.filter((d) => d.name && d.footprint) : [];
    previewed = resource;
    $("preview").hidden = !layers.length;
    $("preview-layer").replaceChildren(...layers.map((d) =>
      el("option", { value: String(d.position) }, d.title ? `${d.title} (${d.name})` : d.name)));
    $("preview-status").textContent = "";
  }

  let previewed = null; // the resource of the detail shown
  let preview = null; // its preview image on the map

  function removePreview() {
    if (preview) map.removeLayer(preview);
    preview = null;
  }

  // A GetMap of one layer over its box, in EPSG:4326: WMS 1.3.0 orders its axes as the CRS defines them
  // (latitude first), 1.1.1 and older take longitude first. The service's own parameters (map=...) are kept.
  function getMapUrl(resource, dataset, bounds, width, height) {
    const url = new URL(resource.url);
    for (const key of [...url.searchParams.keys()]) {
      if (/^(service|request|version|layers|styles|srs|crs|bbox|width|height|format|transparent)$/i.test(key)) {
        url.searchParams.delete(key);
      }
    }
    const modern = !resource.version || !/^1\.(0|1)\b/.test(resource.version);
    const [w, s, e, n] = [bounds.getWest(), bounds.getSouth(), bounds.getEast(), bounds.getNorth()];
    const params = {
      SERVICE: "WMS", REQUEST: "GetMap", VERSION: modern ? "1.3.0" : "1.1.1", LAYERS: dataset.name, STYLES: "",
      FORMAT: "image/png", TRANSPARENT: "TRUE", WIDTH: String(width), HEIGHT: String(height),
      [modern ? "CRS" : "SRS"]: "EPSG:4326", BBOX: (modern ? [s, w, n, e] : [w, s, e, n]).join(","),
    };
    for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
    return url.toString();
  }

  const PREVIEW_PIXELS = 512; // of the image's longer side
  const MIN_SPAN = 0.01; // degrees: a point's box is widened to this

  // Loaded only when asked for: the image comes from the service's own server, which learns who looked.
  function showPreview() {
    const dataset = previewed.datasets.find((d) => String(d.position) === $("preview-layer").value);
    if (!dataset) return;
    removePreview();
    let bounds = L.geoJSON(dataset.footprint).getBounds();
    if (bounds.getEast() - bounds.getWest() < MIN_SPAN || bounds.getNorth() - bounds.getSouth() < MIN_SPAN) {
      bounds = bounds.getCenter().toBounds(MIN_SPAN * 111000);
    }
    // the image's shape is the box's on the map (Web Mercator); over a box of a few degrees an EPSG:4326
    // image drawn on it is off by less than a pixel, over a continent its middle is shifted a little
    const corner = map.project(bounds.getNorthWest(), 0);
    const other = map.project(bounds.getSouthEast(), 0);
    const ratio = Math.max(1e-3, (other.y - corner.y) / Math.max(1e-9, other.x - corner.x));
    const [width, height] = ratio > 1 ? [Math.max(1, Math.round(PREVIEW_PIXELS / ratio)), PREVIEW_PIXELS] :
      [PREVIEW_PIXELS, Math.max(1, Math.round(PREVIEW_PIXELS * ratio))];
    const url = getMapUrl(previewed, dataset, bounds, width, height);
    preview = L.imageOverlay(url, bounds, {
      pane: "preview", className: "wms-preview", opacity: 0.85, alt: `Preview of ${dataset.name}`,
    });
    const said = (text, isError) => {
      $("preview-status").replaceChildren(text, " ", link(url, "GetMap"));
      $("preview-status").classList.toggle("error", isError);
    };
    preview.on("load", () => said(`Preview of ${dataset.name}, from the service.`, false));
    preview.on("error", () => said(`The service sent no image of ${dataset.name} (it may not answer, or refuse ` +
      "EPSG:4326 or PNG).", true));
    said("Loading the preview…", false);
    preview.addTo(map);
    map.fitBounds(bounds, { padding: [24, 24], maxZoom: 14 });
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
    const checkBox = (value, title) => {
      const box = el("input", { type: "checkbox", value });
      box.addEventListener("change", () => search(true));
      return el("label", { title }, box, ` ${value}`);
    };
    $("conformance").append(...Object.entries(CONFORMANCE_TITLES).map(([level, title]) => checkBox(level, title)));
    $("inspire").append(...Object.entries(INSPIRE_VERDICTS).map(([verdict, title]) => checkBox(verdict, title)));
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
  for (const id of [...FILTERS, "in-view", "answering"]) {
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
  $("copy-endpoint").addEventListener("click", () => copyText($("copy-endpoint"), $("copy-endpoint").dataset.copy));
  $("show-preview").addEventListener("click", showPreview);
  $("export-format").addEventListener("change", exportLink);
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
  // q, type (repeated), run, level, concept, provider, min_availability, answering=true, in_view=false,
  // footprint=none, conformance and inspire (repeated), offset.
  function applyAddress() {
    const address = new URLSearchParams(location.search);
    if (address.has("q")) $("q").value = address.get("q");
    for (const [id, name] of CHECK_BOXES) {
      const chosen = new Set(address.getAll(name));
      for (const box of document.querySelectorAll(`#${id} input`)) box.checked = chosen.has(box.value);
    }
    const run = address.get("run");
    if (run && ![...$("run").options].some((o) => o.value === run)) $("run").append(el("option", { value: run }, run));
    const level = address.get("level");
    if (level && ![...$("level").options].some((o) => o.value === level)) $("level").append(el("option", { value: level }, level));
    const provider = address.get("provider");
    if (provider && ![...$("provider").options].some((o) => o.value === provider)) {
      $("provider").append(el("option", { value: provider }, provider));
    }
    const availability = address.get("min_availability");
    if (availability && ![...$("min_availability").options].some((o) => o.value === availability)) {
      $("min_availability").append(el("option", { value: availability }, `at least ${availability} %`));
    }
    for (const id of FILTERS) $(id).value = address.get(id) || "";
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
