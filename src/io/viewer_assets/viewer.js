/* wxcast forecast viewer. Reads window.WXCAST_MANIFEST (manifest.js, written by `wxcast export`),
 * shows one PNG per variable and lead, steps through leads with a slider, buttons and the arrow
 * keys, and draws a wind-particle layer from the exported grib2json u/v files on a canvas over
 * the map area of the PNG. The page state lives in the URL hash (#var=2t&lead=24&wind=1), so a
 * view can be bookmarked. Plain ES5-level browser JavaScript: no build step, no network. */
(function () {
  'use strict';

  var M = window.WXCAST_MANIFEST;
  var $ = function (id) { return document.getElementById(id); };
  var DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  /* Styles whose maps are mostly pale: dark particles there, white ones elsewhere. */
  var PALE = { msl: 1, precipitation: 1, wind: 1 };

  function fatal(msg) {
    var f = $('fatal');
    f.textContent = msg;
    f.hidden = false;
  }
  if (!M || !M.variables || !M.leads) {
    fatal('No forecast here: manifest.js is missing or empty. Run "wxcast export FORECAST.nc ' +
          '--output DIR" and open DIR/index.html.');
    return;
  }
  if (!M.variables.length || !M.leads.length) {
    fatal('The export holds no variables or no leads.');
    return;
  }

  function pad(n) { return (n < 10 ? '0' : '') + n; }
  function fmtTime(unix) {
    var d = new Date(unix * 1000);
    return DAYS[d.getUTCDay()] + ' ' + pad(d.getUTCDate()) + ' ' + MONTHS[d.getUTCMonth()] + ' ' +
      d.getUTCFullYear() + ' ' + pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()) + ' UTC';
  }
  function fmtLead(h) {
    var s = (h < 0 ? '-' : '+') + Math.abs(h).toString().replace(/\.0+$/, '') + 'h';
    if (Math.abs(h) >= 24) {
      var d = Math.floor(Math.abs(h) / 24), r = Math.abs(h) - 24 * d;
      s += ' (' + d + 'd' + (r ? ' ' + r + 'h' : '') + ')';
    }
    return s;
  }
  function fmtNum(x) {
    var a = Math.abs(x);
    return a >= 100 || a === 0 ? x.toFixed(0) : a >= 10 ? x.toFixed(1).replace(/\.0$/, '') :
      x.toPrecision(2);
  }

  var state = { v: 0, k: 0, particles: true, level: 'auto', timer: null };

  /* ---- URL hash ---------------------------------------------------------------------------- */
  function readHash() {
    var h = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      var p = kv.split('=');
      if (p[0]) h[decodeURIComponent(p[0])] = decodeURIComponent(p[1] || '');
    });
    M.variables.forEach(function (v, i) { if (v.id === h['var']) state.v = i; });
    if (h.lead !== undefined)
      M.leads.forEach(function (l, i) { if (String(l.lead_h) === h.lead) state.k = i; });
    if (h.wind !== undefined) state.particles = h.wind !== '0';
    if (h.level) state.level = h.level;
  }
  function writeHash() {
    var h = '#var=' + encodeURIComponent(M.variables[state.v].id) + '&lead=' +
      M.leads[state.k].lead_h + '&wind=' + (state.particles ? 1 : 0) +
      (state.level !== 'auto' ? '&level=' + encodeURIComponent(state.level) : '');
    if (location.hash === h) return;
    try { history.replaceState(null, '', h); } catch (e) { /* some file:// setups refuse */ }
  }

  /* ---- header, variable list, slider ------------------------------------------------------- */
  $('run-title').textContent = (M.title || 'Forecast') + (M.init ? ' \u2014 run of ' +
    fmtTime(M.init_unix) : '');
  $('run-sub').textContent = (M.source ? M.source + ' \u00b7 ' : '') + M.variables.length +
    ' variables \u00b7 ' + M.leads.length + ' leads, ' + fmtLead(M.leads[0].lead_h) + ' to ' +
    fmtLead(M.leads[M.leads.length - 1].lead_h);

  var varButtons = [];
  (function buildVars() {
    var box = $('vars'), groups = [['single', 'Surface'], ['pressure', 'Pressure levels']];
    groups.forEach(function (g) {
      var members = [];
      M.variables.forEach(function (v, i) { if (v.level_type === g[0]) members.push(i); });
      if (!members.length) return;
      var head = document.createElement('div');
      head.className = 'group';
      head.textContent = g[1];
      box.appendChild(head);
      members.forEach(function (i) {
        var v = M.variables[i], b = document.createElement('button');
        b.type = 'button';
        b.setAttribute('role', 'radio');
        b.dataset.index = i;
        b.title = v.name + ' (' + v.id + ')';
        b.innerHTML = '<span class="u"></span>';
        b.firstChild.textContent = v.units;
        b.appendChild(document.createTextNode(v.name));
        b.addEventListener('click', function () { setVar(i); });
        varButtons[i] = b;
        box.appendChild(b);
      });
    });
  })();

  var slider = $('slider');
  slider.max = M.leads.length - 1;
  (function buildTicks() {
    var ticks = $('ticks'), n = M.leads.length, every = Math.max(1, Math.ceil(n / 10));
    for (var i = 0; i < n; i += every) {
      var s = document.createElement('span');
      s.textContent = '+' + String(M.leads[i].lead_h).replace(/\.0+$/, '') + 'h';
      s.style.left = (n > 1 ? 100 * i / (n - 1) : 0) + '%';
      s.dataset.index = i;
      s.addEventListener('click', function (e) { setLead(+e.target.dataset.index); });
      ticks.appendChild(s);
    }
  })();

  /* ---- wind layers ------------------------------------------------------------------------- */
  var winds = M.wind || [], windCache = {}, windPending = {};
  (function buildWindSelect() {
    var sel = $('wind-level');
    var o = document.createElement('option');
    o.value = 'auto';
    o.textContent = 'auto';
    sel.appendChild(o);
    winds.forEach(function (w) {
      var p = document.createElement('option');
      p.value = w.id;
      p.textContent = w.label;
      sel.appendChild(p);
    });
    if (!winds.length) {
      $('particles').disabled = true;
      sel.disabled = true;
      $('wind-note').textContent = 'No u/v pair was exported.';
    }
  })();

  function windFor(v) {
    if (!winds.length) return null;
    if (state.level !== 'auto') {
      for (var i = 0; i < winds.length; i++) if (winds[i].id === state.level) return winds[i];
    }
    var best = null, bestd = Infinity;
    winds.forEach(function (w) {
      var d = v.level > 0 ? (w.level > 0 ? Math.abs(Math.log(w.level / v.level)) : 50)
                          : (w.level > 0 ? 100 + w.level / 1000 : Math.abs(w.height_m - 10) / 1000);
      if (d < bestd) { bestd = d; best = w; }
    });
    return best;
  }

  function parseWind(records) {
    var u = null, v = null;
    records.forEach(function (r) {
      if (r.header.parameterCategory === 2 && r.header.parameterNumber === 2) u = r;
      if (r.header.parameterCategory === 2 && r.header.parameterNumber === 3) v = r;
    });
    if (!u || !v) return null;
    var h = u.header;
    return { nx: h.nx, ny: h.ny, lo1: h.lo1, la1: h.la1, dx: h.dx, dy: h.dy,
             periodic: Math.abs(h.nx * h.dx - 360) < 1e-6, u: u.data, v: v.data };
  }

  /* Loads wind/<key>.json: fetch() over http(s), a script tag under file:// (where browsers
   * refuse fetch of local files); calls back with the parsed field or null. */
  function loadWind(file, cb) {
    if (windCache[file] !== undefined) return cb(windCache[file]);
    if (windPending[file]) return windPending[file].push(cb);
    windPending[file] = [cb];
    var key = file.replace(/^.*\//, '').replace(/\.json$/, '');
    function done(records) {
      var f = records ? parseWind(records) : null;
      windCache[file] = f;
      var cbs = windPending[file];
      delete windPending[file];
      cbs.forEach(function (c) { c(f); });
    }
    function viaScript() {
      var s = document.createElement('script');
      s.src = file.replace(/\.json$/, '.js');
      s.onload = function () { done((window.WXCAST_WIND || {})[key] || null); };
      s.onerror = function () { done(null); };
      document.head.appendChild(s);
    }
    if (/^https?:$/.test(location.protocol) && window.fetch) {
      fetch(file).then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
        .then(done, viaScript);
    } else {
      viaScript();
    }
  }

  /* Bilinear u, v at lon/lat from a grib2json grid (rows north→south from la1). */
  function windAt(f, lon, lat) {
    var x = (lon - f.lo1) / f.dx, y = (f.la1 - lat) / f.dy;
    if (f.periodic) x = ((x % f.nx) + f.nx) % f.nx;
    if (y < 0 || y > f.ny - 1 || x < 0 || x > (f.periodic ? f.nx : f.nx - 1)) return null;
    var x0 = Math.floor(x), y0 = Math.floor(y), x1 = x0 + 1, y1 = Math.min(y0 + 1, f.ny - 1);
    if (x1 >= f.nx) x1 = f.periodic ? 0 : f.nx - 1;
    if (x0 >= f.nx) x0 = f.nx - 1;
    var tx = x - Math.floor(x), ty = y - y0, out = [0, 0], comp = [f.u, f.v];
    for (var c = 0; c < 2; c++) {
      var g = comp[c], a = g[y0 * f.nx + x0], b = g[y0 * f.nx + x1], d = g[y1 * f.nx + x0],
          e = g[y1 * f.nx + x1];
      if (a === null || b === null || d === null || e === null) return null;
      out[c] = (1 - ty) * ((1 - tx) * a + tx * b) + ty * ((1 - tx) * d + tx * e);
    }
    return out;
  }

  /* ---- particles --------------------------------------------------------------------------- */
  var canvas = $('particle-canvas'), ctx2d = canvas.getContext('2d');
  var P = { field: null, parts: [], raf: 0, colour: '#fff', w: 0, h: 0 };
  var MAX_AGE = 90;

  function spawn(p) {
    p.x = Math.random();
    p.y = Math.random();
    p.age = Math.floor(Math.random() * MAX_AGE);
  }
  function sizeCanvas() {
    var v = M.variables[state.v], im = v.image, m = im.map;
    canvas.style.left = (100 * m[0] / im.width) + '%';
    canvas.style.top = (100 * m[1] / im.height) + '%';
    canvas.style.width = (100 * m[2] / im.width) + '%';
    canvas.style.height = (100 * m[3] / im.height) + '%';
    var r = canvas.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
    var w = Math.max(1, Math.round(r.width * dpr)), h = Math.max(1, Math.round(r.height * dpr));
    if (w !== P.w || h !== P.h) {
      canvas.width = P.w = w;
      canvas.height = P.h = h;
      var n = Math.min(5000, Math.round(w * h / 140));
      P.parts = [];
      for (var i = 0; i < n; i++) { var p = {}; spawn(p); P.parts.push(p); }
    }
  }
  function frame() {
    P.raf = 0;
    if (!P.field || !state.particles) { ctx2d.clearRect(0, 0, P.w, P.h); return; }
    var west = M.projection ? M.projection.west : -180, w = P.w, h = P.h;
    /* 0.06 px per frame per m/s whatever the map's size: dt in seconds per frame. */
    var dt = 0.06 * 360 * 111200 / w;
    ctx2d.globalCompositeOperation = 'destination-in';
    ctx2d.fillStyle = 'rgba(0,0,0,0.94)';
    ctx2d.fillRect(0, 0, w, h);
    ctx2d.globalCompositeOperation = 'source-over';
    ctx2d.strokeStyle = P.colour;
    ctx2d.lineWidth = Math.max(1, (window.devicePixelRatio || 1) * 1.3);
    ctx2d.beginPath();
    for (var i = 0; i < P.parts.length; i++) {
      var p = P.parts[i];
      if (++p.age > MAX_AGE) { spawn(p); p.age = 0; continue; }
      var lon = west + p.x * 360, lat = 90 - p.y * 180, uv = windAt(P.field, lon, lat);
      if (!uv) { spawn(p); continue; }
      var coslat = Math.max(0.15, Math.cos(lat * Math.PI / 180));
      var nx = p.x + uv[0] * dt / (111200 * coslat) / 360, ny = p.y - uv[1] * dt / 111200 / 180;
      if (ny < 0 || ny >= 1) { spawn(p); continue; }
      if (nx < 0 || nx >= 1) { p.x = (nx + 1) % 1; p.y = ny; continue; }
      ctx2d.moveTo(p.x * w, p.y * h);
      ctx2d.lineTo(nx * w, ny * h);
      p.x = nx;
      p.y = ny;
    }
    ctx2d.stroke();
    P.raf = requestAnimationFrame(frame);
  }
  function startParticles() {
    if (!P.raf && P.field && state.particles) P.raf = requestAnimationFrame(frame);
    if (!state.particles || !P.field) { if (P.raf) cancelAnimationFrame(P.raf); P.raf = 0; ctx2d.clearRect(0, 0, P.w, P.h); }
  }
  function updateWind() {
    var v = M.variables[state.v], w = windFor(v), note = $('wind-note');
    P.colour = PALE[v.colour_map] ? 'rgba(25,25,35,0.85)' : 'rgba(255,255,255,0.9)';
    if (!w) { P.field = null; startParticles(); return; }
    var file = w.files[state.k];
    note.textContent = state.particles ? 'Particles: ' + w.label + ' wind' : '';
    if (!file) { P.field = null; note.textContent = 'No ' + w.label + ' wind at this lead.'; startParticles(); return; }
    var want = state.k, wantVar = state.v;
    loadWind(file, function (f) {
      if (want !== state.k || wantVar !== state.v) return;
      if (!f) note.textContent = 'Could not read ' + file + '.';
      P.field = f;
      sizeCanvas();
      startParticles();
    });
  }

  /* ---- map, legend, time ------------------------------------------------------------------- */
  var img = $('map'), preloaded = {};
  img.addEventListener('load', function () {
    document.body.dataset.loaded = img.getAttribute('src');
    sizeCanvas();
  });
  img.addEventListener('error', function () {
    $('missing').textContent = 'Could not load ' + img.getAttribute('src') + '.';
    $('missing').hidden = false;
  });

  function legend(v) {
    var box = $('legend'), span = v.vmax - v.vmin, parts = [];
    v.stops.forEach(function (s, i) {
      var at = Math.max(0, Math.min(100, 100 * (s[0] - v.vmin) / span));
      if (v.stepped) {
        var next = i + 1 < v.stops.length ? Math.min(100, 100 * (v.stops[i + 1][0] - v.vmin) / span) : 100;
        parts.push(s[1] + ' ' + at + '%', s[1] + ' ' + next + '%');
      } else {
        parts.push(s[1] + ' ' + at + '%');
      }
    });
    box.style.background = 'linear-gradient(to right, ' + parts.join(', ') + ')';
    var lab = $('legend-labels') || document.createElement('div');
    lab.id = 'legend-labels';
    lab.innerHTML = '';
    [v.vmin, (v.vmin + v.vmax) / 2, v.vmax].forEach(function (x) {
      var s = document.createElement('span');
      s.textContent = fmtNum(x);
      lab.appendChild(s);
    });
    box.parentNode.insertBefore(lab, box.nextSibling);
    $('scale-info').textContent = v.units + ' \u00b7 ' + v.colour_map + ' scale' +
      (v.contour_step > 0 ? ' \u00b7 contours every ' + v.contour_step + ' ' + v.units : '') +
      (v.stepped ? ' \u00b7 stepped' : '');
  }

  /* Largest size (up to 2x) at which map and time bar fit the window without scrolling. */
  function fitStage() {
    var v = M.variables[state.v], im = v.image, view = $('view');
    var aw = view.clientWidth - 32;
    var ah = window.innerHeight - $('bar').offsetHeight - $('timebar').offsetHeight - 70;
    var s = Math.max(0.5, Math.min(2, aw / im.width, ah / im.height));
    document.documentElement.style.setProperty('--img-w', Math.floor(im.width * s) + 'px');
  }

  function preload(v) {
    v.files.forEach(function (f) {
      if (f && !preloaded[f]) { preloaded[f] = new Image(); preloaded[f].src = f; }
    });
  }

  function show() {
    var v = M.variables[state.v], l = M.leads[state.k], f = v.files[state.k];
    fitStage();
    $('stage').style.aspectRatio = v.image.width + ' / ' + v.image.height;
    img.style.visibility = f ? 'visible' : 'hidden';
    if (f) {
      $('missing').hidden = true;
      if (img.getAttribute('src') !== f) img.src = f;
    } else {
      $('missing').textContent = 'No map of ' + v.name + ' at lead ' + fmtLead(l.lead_h) + '.';
      $('missing').hidden = false;
    }
    img.alt = v.name + ', valid ' + fmtTime(l.valid_unix);
    $('valid').textContent = 'Valid ' + fmtTime(l.valid_unix);
    $('lead').textContent = 'Lead ' + fmtLead(l.lead_h) + (M.init ? '' : ' from the first time (no reference time in the file)');
    slider.value = state.k;
    slider.setAttribute('aria-valuetext', 'lead ' + fmtLead(l.lead_h));
    Array.prototype.forEach.call($('ticks').children, function (t) {
      t.className = +t.dataset.index === state.k ? 'on' : '';
    });
    varButtons.forEach(function (b, i) { if (b) b.setAttribute('aria-checked', i === state.v); });
    $('particles').checked = state.particles && winds.length > 0;
    $('wind-level').value = state.level;
    legend(v);
    updateWind();
    writeHash();
    preload(v);
  }

  function setLead(k) {
    state.k = Math.max(0, Math.min(M.leads.length - 1, k));
    show();
  }
  function setVar(i) {
    state.v = (i + M.variables.length) % M.variables.length;
    show();
  }
  function togglePlay() {
    var b = $('play');
    if (state.timer) {
      clearInterval(state.timer);
      state.timer = null;
      b.className = '';
      b.innerHTML = '&#9654;';
      return;
    }
    b.className = 'playing';
    b.innerHTML = '&#10074;&#10074;';
    state.timer = setInterval(function () { setLead((state.k + 1) % M.leads.length); }, 800);
  }

  /* The variable list in display order, for the up/down keys. */
  function varOrder() {
    return Array.prototype.map.call(document.querySelectorAll('#vars button'),
                                    function (b) { return +b.dataset.index; });
  }

  slider.addEventListener('input', function () { setLead(+slider.value); });
  $('prev').addEventListener('click', function () { setLead(state.k - 1); });
  $('next').addEventListener('click', function () { setLead(state.k + 1); });
  $('play').addEventListener('click', togglePlay);
  $('particles').addEventListener('change', function (e) {
    state.particles = e.target.checked;
    show();
  });
  $('wind-level').addEventListener('change', function (e) {
    state.level = e.target.value;
    show();
  });
  document.addEventListener('keydown', function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var tag = e.target.tagName, onSlider = e.target === slider;
    if (tag === 'SELECT' || (tag === 'INPUT' && !onSlider && e.target.type !== 'checkbox')) return;
    if (e.key === ' ' && (e.target.id === 'play' || e.target.type === 'checkbox')) return; /* own action */
    var order = varOrder(), pos = order.indexOf(state.v);
    switch (e.key) {
      case 'ArrowLeft': if (onSlider) return; setLead(state.k - 1); break;
      case 'ArrowRight': if (onSlider) return; setLead(state.k + 1); break;
      case 'Home': if (onSlider) return; setLead(0); break;
      case 'End': if (onSlider) return; setLead(M.leads.length - 1); break;
      case 'ArrowUp': setVar(order[(pos - 1 + order.length) % order.length]); break;
      case 'ArrowDown': setVar(order[(pos + 1) % order.length]); break;
      case ' ': togglePlay(); break;
      case 'w': case 'W': state.particles = !state.particles; show(); break;
      default: return;
    }
    e.preventDefault();
  });

  /* Position readout: latitude/longitude under the pointer, and the wind there when loaded. */
  $('stage').addEventListener('mousemove', function (e) {
    var v = M.variables[state.v], m = v.image.map, r = img.getBoundingClientRect();
    var s = r.width / v.image.width, x = (e.clientX - r.left) / s - m[0], y = (e.clientY - r.top) / s - m[1];
    if (x < 0 || y < 0 || x >= m[2] || y >= m[3]) { $('probe').innerHTML = '&nbsp;'; return; }
    var west = M.projection ? M.projection.west : -180;
    var lon = west + 360 * x / m[2], lat = 90 - 180 * y / m[3];
    var ln = ((lon + 540) % 360) - 180;
    var t = Math.abs(lat).toFixed(1) + '\u00b0' + (lat >= 0 ? 'N' : 'S') + '  ' +
      Math.abs(ln).toFixed(1) + '\u00b0' + (ln >= 0 ? 'E' : 'W');
    var uv = P.field ? windAt(P.field, lon, lat) : null;
    if (uv) {
      var sp = Math.sqrt(uv[0] * uv[0] + uv[1] * uv[1]);
      var from = (270 - Math.atan2(uv[1], uv[0]) * 180 / Math.PI + 360) % 360;
      t += '   wind ' + sp.toFixed(1) + ' m/s from ' + from.toFixed(0) + '\u00b0';
    }
    $('probe').textContent = t;
  });
  window.addEventListener('resize', function () { fitStage(); P.w = 0; sizeCanvas(); });

  readHash();
  show();
  /* For tests and embedding pages: the current state, read-only by convention. */
  window.wxViewer = { state: state, manifest: M, particles: P, setLead: setLead, setVar: setVar };
})();
