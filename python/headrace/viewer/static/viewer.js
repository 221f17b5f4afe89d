// headrace view: the page's side of the protocol in docs/viewer.md.
//
// One WebSocket at /ws. The server sends `hello` once, `state` after every change and as playback
// moves, `stats` about twice a second, `error`, and binary images (uint32 LE n, n bytes of JSON
// header, JPEG). The page sends its requests as JSON and acks each image once it is on screen; the
// server sends the next image only after that ack.
//
// Controls never change the page's state themselves: they send a request and follow the `state`
// that comes back. Setting a control's value from code fires no `input`/`change` event, so
// updating the controls from `state` never echoes back to the server.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);

  const ui = {
    statusConn: $('status-conn'), statusError: $('status-error'), rendererNote: $('renderer-note'),
    file: $('file'), fileInfo: $('file-info'),
    viewport: $('viewport'), view: $('view'),
    play: $('play'), stepBack: $('step-back'), stepForward: $('step-forward'), loop: $('loop'),
    slider: $('frame-slider'), frameNumber: $('frame-number'), frameCount: $('frame-count'),
    frameTime: $('frame-time'), fps: $('fps'), stride: $('stride'),
    resetView: $('reset-view'), rendererSize: $('renderer-size'),
    volumeControls: $('volume-controls'), colourMap: $('colour-map'), mode: $('mode'),
    iso: $('iso'), isoValue: $('iso-value'),
    tf: $('tf-editor'), tfMin: $('tf-min'), tfMax: $('tf-max'), tfMap: $('tf-map'),
    particleControls: $('particle-controls'), radiusScale: $('radius-scale'),
    radiusScaleValue: $('radius-scale-value'), colourBy: $('colour-by'),
    colourMapParticles: $('colour-map-particles'),
    gbps: $('stat-gbps'), vsDisk: $('stat-vs-disk'), vsH2d: $('stat-vs-h2d'),
    diskGbps: $('stat-disk-gbps'), h2dGbps: $('stat-h2d-gbps'), barDisk: $('bar-disk'), barH2d: $('bar-h2d'),
    statFps: $('stat-fps'), dropped: $('stat-dropped'), frameMs: $('stat-frame-ms'),
    stackWait: $('stack-wait'), stackRender: $('stack-render'), stackEncode: $('stack-encode'),
    streamMs: $('stat-stream-ms'), into: $('stat-into'), cache: $('stat-cache'), path: $('stat-path'), device: $('stat-device'),
  };

  // What tests read; kept up to date as messages arrive and images are shown.
  const viewer = {shown: 0, frame: null, seq: null, state: null, stats: null, hello: null, send};
  window.headraceViewer = viewer;

  let currentFile = null;  // the hello entry of the file the last state is about

  // Controls the user is dragging or typing in: `state` leaves their value alone until they let
  // go, so that a slider does not jump back under the pointer while the server catches up.
  const held = new Set();

  // ---------------------------------------------------------------- formatting

  const dash = '–';

  // Rates and milliseconds: fewer decimals as the number grows, no trailing zeros ("0.95", "12.3", "1234").
  function num(v) {
    if (typeof v !== 'number' || !Number.isFinite(v)) return 'n/a';
    const a = Math.abs(v);
    return String(Number(v.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2)));
  }

  // Times and field values, whose scale is the data's: significant digits ("0.3", "1.5e-7").
  function precise(v, digits = 6) {
    if (typeof v !== 'number' || !Number.isFinite(v)) return dash;
    return String(Number(v.toPrecision(digits)));
  }

  // GB/s, or MB/s below one GB/s (a small file or a CPU machine must not read as "0 GB/s").
  function rate(gbps) {
    if (typeof gbps !== 'number' || !Number.isFinite(gbps)) return 'n/a';
    return gbps >= 1 || gbps === 0 ? `${num(gbps)} GB/s` : `${num(gbps * 1000)} MB/s`;
  }

  // Decimal units, as the rates are in GB/s.
  function bytes(n) {
    if (typeof n !== 'number' || !Number.isFinite(n)) return 'n/a';
    const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
    let i = 0;
    while (Math.abs(n) >= 1000 && i < units.length - 1) { n /= 1000; i += 1; }
    return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
  }

  // ---------------------------------------------------------------- connection

  let socket = null;
  let errorTimer = null;

  function setConnection(text, cls) {
    ui.statusConn.textContent = text;
    ui.statusConn.className = `conn ${cls}`;
  }

  function showError(message) {
    ui.statusError.textContent = message;
    ui.statusError.hidden = false;
    clearTimeout(errorTimer);
    errorTimer = setTimeout(() => { ui.statusError.hidden = true; }, 6000);
  }

  function send(message) {
    if (!socket || socket.readyState !== WebSocket.OPEN) return false;
    socket.send(JSON.stringify(message));
    return true;
  }

  function connect() {
    if (!location.host) {  // the page opened as a file
      setConnection('disconnected: no server (open the page from headrace view)', 'down');
      return;
    }
    setConnection('connecting', 'connecting');
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    try {
      socket = new WebSocket(`${scheme}//${location.host}/ws`);
    } catch (err) {
      setConnection(`disconnected: ${err.message}`, 'down');
      return;
    }
    socket.binaryType = 'arraybuffer';
    socket.addEventListener('open', () => setConnection('connected', 'up'));
    socket.addEventListener('close', (event) => {
      const reason = event.reason || (event.code === 1000 ? 'closed' : `connection lost (code ${event.code})`);
      setConnection(`disconnected: ${reason}`, 'down');
    });
    socket.addEventListener('message', (event) => {
      if (typeof event.data === 'string') onText(event.data);
      else queueImage(event.data);
    });
  }

  function onText(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      showError('unreadable message from the server');
      return;
    }
    switch (message.type) {
      case 'hello': onHello(message); break;
      case 'state': onState(message); break;
      case 'stats': onStats(message); break;
      case 'error': showError(message.message); break;
      default: break;  // a newer server's message this page does not know: ignore it
    }
  }

  // ---------------------------------------------------------------- images

  // Images are shown one after the other: the server waits for each ack, so normally one is in
  // flight, but the chain keeps them in order (and each acked) even if more arrive.
  let imageChain = Promise.resolve();
  let imageUrl = null;

  function queueImage(buffer) {
    imageChain = imageChain.then(() => showImage(buffer));
  }

  async function showImage(buffer) {
    let header;
    try {
      const n = new DataView(buffer).getUint32(0, true);
      header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, n)));
      const blob = new Blob([new Uint8Array(buffer, 4 + n)], {type: `image/${header.format || 'jpeg'}`});
      // The old image stays on screen until the new one is ready, even with its URL revoked.
      if (imageUrl) URL.revokeObjectURL(imageUrl);
      imageUrl = URL.createObjectURL(blob);
      ui.view.src = imageUrl;
      await ui.view.decode();
    } catch (err) {
      showError(`image not shown: ${err.message}`);
      // Still ack a broken image (if its header was readable): the stream would wait for it forever.
      if (header && Number.isInteger(header.seq)) send({type: 'ack', seq: header.seq});
      return;
    }
    if (header.width && header.height) setViewSize(header.width, header.height);
    viewer.shown += 1;
    viewer.frame = header.frame;
    viewer.seq = header.seq;
    ui.frameNumber.textContent = String(header.frame);
    ui.frameTime.textContent = precise(header.time);
    send({type: 'ack', seq: header.seq});
  }

  // The image's size in pixels. Kept here: the img's width and height properties read back the
  // size it is drawn at, which CSS may have made smaller.
  const viewSize = {width: 1, height: 1};

  function setViewSize(width, height) {
    if (width === viewSize.width && height === viewSize.height) return;
    viewSize.width = width;
    viewSize.height = height;
    ui.view.setAttribute('width', String(width));
    ui.view.setAttribute('height', String(height));
  }

  // ---------------------------------------------------------------- hello

  function fillSelect(select, values, labels = values) {
    select.replaceChildren(...values.map((value, i) => new Option(labels[i], value)));
  }

  function onHello(hello) {
    viewer.hello = hello;
    const r = hello.renderer;
    setViewSize(r.width, r.height);
    ui.rendererSize.textContent = `${r.width}x${r.height}`;
    ui.rendererNote.hidden = Boolean(r.gpu);
    ui.rendererNote.textContent = r.gpu ? ''
      : `No GPU: rendered by the CPU reference at ${r.width}x${r.height}.${r.note ? ` ${r.note}` : ''}`;
    ui.into.textContent = r.gpu ? 'into GPU memory' : 'into host memory';
    ui.device.textContent = r.device || dash;
    fillSelect(ui.file, hello.files.map((f) => String(f.id)), hello.files.map((f) => f.name));
    fillSelect(ui.colourMap, hello.colour_maps);
    fillSelect(ui.colourMapParticles, hello.colour_maps);
    currentFile = null;
  }

  function fileById(id) {
    return viewer.hello ? viewer.hello.files.find((f) => f.id === id) : undefined;
  }

  // ---------------------------------------------------------------- state

  function onState(state) {
    viewer.state = state;
    const file = fileById(state.file);
    if (file && file !== currentFile) openedFile(file);

    ui.file.value = String(state.file);
    setPlaying(state.playing);
    ui.loop.checked = state.loop;
    setFps(state.fps);
    if (!held.has(ui.stride)) ui.stride.value = String(state.stride);

    ui.slider.max = String(Math.max(0, state.frames - 1));
    if (!held.has(ui.slider)) ui.slider.value = String(state.frame);
    ui.frameCount.textContent = `/ ${state.frames}`;

    if (state.style) applyStyle(state.style);
  }

  // A new file: the controls that depend on its kind.
  function openedFile(file) {
    currentFile = file;
    const volume = file.kind === 'volume';
    ui.volumeControls.hidden = !volume;
    ui.particleControls.hidden = volume;
    const span = file.times && file.times.length
      ? `, t ${precise(file.times[0])} to ${precise(file.times[file.times.length - 1])}` : '';
    ui.fileInfo.textContent = `${file.kind}, ${file.frames} frames${span}`;

    if (volume) {
      const [lo, hi] = file.value_range || [0, 1];
      ui.iso.min = String(lo);
      ui.iso.max = String(hi);
      ui.iso.step = hi > lo ? String((hi - lo) / 200) : 'any';
      ui.tfMin.textContent = precise(lo, 4);
      ui.tfMax.textContent = precise(hi, 4);
      // The file's default until a state says otherwise.
      if (typeof file.iso === 'number') {
        ui.iso.value = String(file.iso);
        ui.isoValue.textContent = precise(file.iso, 4);
      }
    } else {
      fillSelect(ui.colourBy, file.colour_by || ['stored']);
    }
  }

  function setPlaying(playing) {
    ui.play.textContent = playing ? 'Pause' : 'Play';
    ui.play.classList.toggle('playing', playing);
  }

  function setFps(fps) {
    const value = String(fps);
    // A rate the server chose that the list lacks gets its own entry, so the select never lies.
    if (![...ui.fps.options].some((o) => o.value === value)) {
      ui.fps.add(new Option(value, value));
    }
    ui.fps.value = value;
  }

  function applyStyle(style) {
    if (style.colour_map !== undefined) {
      ui.colourMap.value = style.colour_map;
      ui.colourMapParticles.value = style.colour_map;
      ui.tfMap.textContent = style.colour_map;
    }
    if (style.mode !== undefined) ui.mode.value = style.mode;
    if (typeof style.iso === 'number' && !held.has(ui.iso)) {
      ui.iso.value = String(style.iso);
      ui.isoValue.textContent = precise(style.iso, 4);
    }
    if (typeof style.radius_scale === 'number' && !held.has(ui.radiusScale)) {
      ui.radiusScale.value = String(style.radius_scale);
      ui.radiusScaleValue.textContent = style.radius_scale.toFixed(2);
    }
    if (style.colour_by !== undefined) {
      ui.colourBy.value = style.colour_by;
      ui.colourMapParticles.disabled = style.colour_by === 'stored';
    }
    if (Array.isArray(style.opacity) && !tfEditing) {
      tfPoints = style.opacity.map(([x, y]) => [x, y]);
      drawTf();
    }
  }

  // ---------------------------------------------------------------- stats

  function ratioRow(gbps, ceiling, name, text, bar, ceilingText) {
    if (!Number.isFinite(gbps) || !Number.isFinite(ceiling) || ceiling <= 0) {
      text.textContent = 'n/a';
      ceilingText.textContent = `(no ${name} rate)`;
      bar.style.width = '0';
      return;
    }
    const ratio = gbps / ceiling;
    text.textContent = `x ${ratio.toFixed(2)} of ${name}`;
    ceilingText.textContent = `(${rate(ceiling)})`;
    bar.style.width = `${Math.min(ratio, 1) * 100}%`;
    // Past the disk's ceiling means the page cache served: another colour shows it at a glance.
    bar.classList.toggle('over', ratio > 1);
  }

  function onStats(stats) {
    viewer.stats = stats;
    ui.gbps.textContent = rate(stats.gbps);
    ratioRow(stats.gbps, stats.disk_gbps, 'disk', ui.vsDisk, ui.barDisk, ui.diskGbps);
    ratioRow(stats.gbps, stats.h2d_gbps, 'H2D', ui.vsH2d, ui.barH2d, ui.h2dGbps);
    ui.statFps.textContent = `${num(stats.shown_fps)} shown, ${num(stats.rendered_fps)} rendered`;
    ui.dropped.textContent = stats.dropped ?? dash;

    const f = stats.frame_ms || {};
    ui.frameMs.textContent = `wait ${num(f.wait)} / render ${num(f.render)} / encode ${num(f.encode)} ms`;
    const total = (f.wait || 0) + (f.render || 0) + (f.encode || 0);
    for (const [seg, v, label] of [[ui.stackWait, f.wait, 'wait'], [ui.stackRender, f.render, 'render'],
      [ui.stackEncode, f.encode, 'encode']]) {
      seg.style.width = total > 0 ? `${((v || 0) / total) * 100}%` : '0';
      seg.title = `${label} ${num(v)} ms`;
    }

    const s = stats.stream_ms || {};
    ui.streamMs.textContent =
      `io ${num(s.io)} / decode ${num(s.decode)} / h2d ${num(s.h2d)} ms`;
    ui.cache.textContent = `${bytes(stats.bytes_from_cache)} from cache, ${bytes(stats.bytes_from_disk)} from disk`;
    ui.path.textContent = stats.path || dash;
    ui.path.title = stats.path || '';
    if (stats.device) ui.device.textContent = stats.device;
  }

  // ---------------------------------------------------------------- helpers for controls

  function holdWhileEditing(input) {
    input.addEventListener('pointerdown', () => held.add(input));
    input.addEventListener('input', () => held.add(input));
    for (const type of ['pointerup', 'pointercancel', 'change']) {
      input.addEventListener(type, () => held.delete(input));
    }
  }

  // Sends the message `message()` makes for a control being dragged: soon() at most once every
  // `ms`, now() when the gesture ends. now() drops a pending send and skips a repeat of what the
  // gesture sent last (a drag's final value has often just gone out).
  function throttledSender(message, ms) {
    let last = 0;
    let timer = null;
    let lastText = null;
    const call = () => {
      timer = null;
      last = performance.now();
      const m = message();
      lastText = JSON.stringify(m);
      send(m);
    };
    return {
      soon() {
        if (timer !== null) return;
        const wait = last + ms - performance.now();
        if (wait <= 0) call(); else timer = setTimeout(call, wait);
      },
      now() {
        clearTimeout(timer);
        timer = null;
        if (JSON.stringify(message()) !== lastText) call();
        lastText = null;
      },
    };
  }

  // ---------------------------------------------------------------- time controls

  ui.file.addEventListener('change', () => send({type: 'open', file: Number(ui.file.value)}));
  ui.play.addEventListener('click', togglePlay);
  ui.stepBack.addEventListener('click', () => send({type: 'step', by: -1}));
  ui.stepForward.addEventListener('click', () => send({type: 'step', by: 1}));
  ui.loop.addEventListener('change', () => send({type: 'set', loop: ui.loop.checked}));
  ui.fps.addEventListener('change', () => send({type: 'set', fps: Number(ui.fps.value)}));

  holdWhileEditing(ui.slider);
  holdWhileEditing(ui.stride);
  ui.slider.addEventListener('change', () => send({type: 'seek', frame: Number(ui.slider.value)}));

  ui.stride.addEventListener('change', () => {
    const stride = Math.round(Number(ui.stride.value));
    if (Number.isFinite(stride) && stride >= 1) {
      send({type: 'set', stride});
    } else if (viewer.state) {
      ui.stride.value = String(viewer.state.stride);
    }
  });

  function togglePlay() {
    send({type: viewer.state && viewer.state.playing ? 'pause' : 'play'});
  }

  // Toolbar buttons do not take the focus on a mouse click, so that space and the arrows keep
  // working as shortcuts afterwards (a focused button would take space as its own click).
  for (const button of document.querySelectorAll('button')) {
    button.addEventListener('mousedown', (event) => event.preventDefault());
  }

  document.addEventListener('keydown', (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target instanceof HTMLElement
        && (target.closest('input, select, textarea') || target.isContentEditable)) return;
    if (event.key === ' ') {
      if (target instanceof HTMLButtonElement) return;  // reached by Tab: space clicks it
      event.preventDefault();
      togglePlay();
    } else if (event.key === 'ArrowLeft') {
      event.preventDefault();
      send({type: 'step', by: -1});
    } else if (event.key === 'ArrowRight') {
      event.preventDefault();
      send({type: 'step', by: 1});
    }
  });

  // ---------------------------------------------------------------- camera

  // Pointer motion and wheel turns add up here and go out at most once per animation frame.
  const camera = {orbit: [0, 0], pan: [0, 0], zoom: 1, scheduled: false};
  let drag = null;  // {pointerId, action, x, y} while a button is down on the image

  // CSS pixels to image pixels: the image may be shown smaller than the renderer's size
  // (object-fit: contain in a smaller area), and the server counts pixels of the image.
  function imagePixelsPerCssPixel() {
    const shown = Math.min(ui.view.clientWidth / viewSize.width, ui.view.clientHeight / viewSize.height);
    return shown > 0 ? 1 / shown : 1;
  }

  function scheduleCamera() {
    if (camera.scheduled) return;
    camera.scheduled = true;
    requestAnimationFrame(flushCamera);
  }

  function flushCamera() {
    camera.scheduled = false;
    const round = (v) => Math.round(v * 100) / 100;
    for (const action of ['orbit', 'pan']) {
      const [dx, dy] = camera[action];
      if (dx !== 0 || dy !== 0) send({type: 'camera', action, dx: round(dx), dy: round(dy)});
      camera[action] = [0, 0];
    }
    if (camera.zoom !== 1) send({type: 'camera', action: 'zoom', factor: camera.zoom});
    camera.zoom = 1;
  }

  ui.view.addEventListener('pointerdown', (event) => {
    if (drag || (event.button !== 0 && event.button !== 2)) return;
    event.preventDefault();
    ui.view.setPointerCapture(event.pointerId);
    drag = {
      pointerId: event.pointerId,
      action: event.shiftKey || event.button === 2 ? 'pan' : 'orbit',
      x: event.clientX,
      y: event.clientY,
    };
    ui.view.classList.add('dragging');
  });

  ui.view.addEventListener('pointermove', (event) => {
    if (!drag || event.pointerId !== drag.pointerId) return;
    const scale = imagePixelsPerCssPixel();
    const delta = camera[drag.action];
    delta[0] += (event.clientX - drag.x) * scale;
    delta[1] += (event.clientY - drag.y) * scale;
    drag.x = event.clientX;
    drag.y = event.clientY;
    scheduleCamera();
  });

  function endDrag(event) {
    if (!drag || event.pointerId !== drag.pointerId) return;
    drag = null;
    ui.view.classList.remove('dragging');
  }
  // Fires after pointerup and pointercancel alike, and whenever the capture goes otherwise.
  ui.view.addEventListener('lostpointercapture', endDrag);

  ui.viewport.addEventListener('wheel', (event) => {
    event.preventDefault();  // the wheel zooms; the page does not scroll
    // Lines and pages (Firefox, some mice) to pixels, so that one notch zooms alike everywhere.
    const unit = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? 800 : 1;
    camera.zoom *= Math.exp(event.deltaY * unit * 0.001);
    scheduleCamera();
  }, {passive: false});

  ui.viewport.addEventListener('contextmenu', (event) => event.preventDefault());
  ui.resetView.addEventListener('click', () => send({type: 'camera', action: 'reset'}));

  // ---------------------------------------------------------------- volume controls

  ui.colourMap.addEventListener('change', () => send({type: 'style', colour_map: ui.colourMap.value}));
  ui.mode.addEventListener('change', () => send({type: 'style', mode: ui.mode.value}));

  const sendIso = throttledSender(() => ({type: 'style', iso: Number(ui.iso.value)}), 100);
  holdWhileEditing(ui.iso);
  ui.iso.addEventListener('input', () => {
    ui.isoValue.textContent = precise(Number(ui.iso.value), 4);
    sendIso.soon();
  });
  ui.iso.addEventListener('change', () => sendIso.now());

  // ---------------------------------------------------------------- opacity transfer function

  // Control points [value fraction, opacity], fractions ascending. The canvas maps fraction to x
  // and opacity to y inside a margin, so that points on the edges stay grabbable.
  let tfPoints = [[0, 0], [1, 1]];
  let tfEditing = false;  // a point is being dragged: `state` does not overwrite the points
  let tfDragIndex = -1;
  let tfMoved = false;    // the dragged point has moved since its last send
  const TF_MARGIN = 7;
  const TF_HIT = 8;   // CSS pixels from a point's centre that still grab it
  const TF_GAP = 1e-3;  // the least distance between neighbouring fractions

  const tfContext = ui.tf.getContext('2d');
  const sendOpacity = throttledSender(() => ({type: 'style', opacity: tfPoints.map(([x, y]) => [x, y])}), 100);

  // The canvas's size on the page; its bitmap follows (see drawTf).
  function tfSize() {
    return {w: ui.tf.clientWidth, h: ui.tf.clientHeight};
  }

  function tfToCanvas([x, y]) {
    const {w, h} = tfSize();
    return [TF_MARGIN + x * (w - 2 * TF_MARGIN), TF_MARGIN + (1 - y) * (h - 2 * TF_MARGIN)];
  }

  function tfFromEvent(event) {
    const rect = ui.tf.getBoundingClientRect();
    const {w, h} = tfSize();
    const clamp = (v) => Math.min(1, Math.max(0, v));
    const round = (v) => Math.round(v * 1e4) / 1e4;
    return [
      round(clamp((event.clientX - rect.left - TF_MARGIN) / (w - 2 * TF_MARGIN))),
      round(clamp(1 - (event.clientY - rect.top - TF_MARGIN) / (h - 2 * TF_MARGIN))),
    ];
  }

  function tfHit(event) {
    const rect = ui.tf.getBoundingClientRect();
    const px = event.clientX - rect.left;
    const py = event.clientY - rect.top;
    let best = -1;
    let bestDistance = TF_HIT;
    tfPoints.forEach((p, i) => {
      const [cx, cy] = tfToCanvas(p);
      const d = Math.hypot(cx - px, cy - py);
      if (d <= bestDistance) { best = i; bestDistance = d; }
    });
    return best;
  }

  function drawTf() {
    const {w, h} = tfSize();
    if (w === 0 || h === 0) return;  // hidden (not a volume): drawn when shown, see the ResizeObserver
    // Draw at the device's pixel density so the curve stays sharp on high-DPI screens.
    const dpr = window.devicePixelRatio || 1;
    if (ui.tf.width !== Math.round(w * dpr) || ui.tf.height !== Math.round(h * dpr)) {
      ui.tf.width = Math.round(w * dpr);
      ui.tf.height = Math.round(h * dpr);
    }
    const ctx = tfContext;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.fillStyle = '#15191e';
    ctx.fillRect(0, 0, w, h);

    ctx.strokeStyle = '#262c34';
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let i = 0; i <= 4; i += 1) {
      const [x] = tfToCanvas([i / 4, 0]);
      const [, y] = tfToCanvas([0, i / 4]);
      ctx.moveTo(Math.round(x) + 0.5, TF_MARGIN);
      ctx.lineTo(Math.round(x) + 0.5, h - TF_MARGIN);
      ctx.moveTo(TF_MARGIN, Math.round(y) + 0.5);
      ctx.lineTo(w - TF_MARGIN, Math.round(y) + 0.5);
    }
    ctx.stroke();

    if (tfPoints.length === 0) return;
    const canvasPoints = tfPoints.map(tfToCanvas);
    const first = canvasPoints[0];
    const last = canvasPoints[canvasPoints.length - 1];
    const [, bottom] = tfToCanvas([0, 0]);

    // Outside the first and last points the opacity stays at their values.
    ctx.beginPath();
    ctx.moveTo(TF_MARGIN, bottom);
    ctx.lineTo(TF_MARGIN, first[1]);
    for (const [x, y] of canvasPoints) ctx.lineTo(x, y);
    ctx.lineTo(w - TF_MARGIN, last[1]);
    ctx.lineTo(w - TF_MARGIN, bottom);
    ctx.closePath();
    ctx.fillStyle = 'rgba(78, 161, 255, 0.18)';
    ctx.fill();

    ctx.beginPath();
    ctx.moveTo(TF_MARGIN, first[1]);
    for (const [x, y] of canvasPoints) ctx.lineTo(x, y);
    ctx.lineTo(w - TF_MARGIN, last[1]);
    ctx.strokeStyle = '#4ea1ff';
    ctx.lineWidth = 1.5;
    ctx.stroke();

    canvasPoints.forEach(([x, y], i) => {
      ctx.beginPath();
      ctx.arc(x, y, i === tfDragIndex ? 5 : 4, 0, 2 * Math.PI);
      ctx.fillStyle = i === tfDragIndex ? '#ffffff' : '#d6dbe1';
      ctx.fill();
      ctx.strokeStyle = '#0d1014';
      ctx.lineWidth = 1.5;
      ctx.stroke();
    });
  }

  function tfRemove(index) {
    if (index < 0 || tfPoints.length <= 2) return;
    tfPoints.splice(index, 1);
    drawTf();
    sendOpacity.now();
  }

  ui.tf.addEventListener('pointerdown', (event) => {
    event.preventDefault();
    const hit = tfHit(event);
    if (event.button === 2) {  // right-click removes
      tfRemove(hit);
      return;
    }
    if (event.button !== 0) return;
    if (hit >= 0) {
      tfDragIndex = hit;
    } else {
      // A new point between its neighbours by fraction; it can then be dragged straight away.
      const point = tfFromEvent(event);
      let index = tfPoints.findIndex(([x]) => x > point[0]);
      if (index < 0) index = tfPoints.length;
      const lo = index > 0 ? tfPoints[index - 1][0] + TF_GAP : 0;
      const hi = index < tfPoints.length ? tfPoints[index][0] - TF_GAP : 1;
      if (lo > hi) return;  // no room between two points this close
      point[0] = Math.min(hi, Math.max(lo, point[0]));
      tfPoints.splice(index, 0, point);
      tfDragIndex = index;
      sendOpacity.now();
    }
    tfEditing = true;
    ui.tf.setPointerCapture(event.pointerId);
    drawTf();
  });

  ui.tf.addEventListener('pointermove', (event) => {
    if (!tfEditing) {
      ui.tf.style.cursor = tfHit(event) >= 0 ? 'grab' : 'crosshair';
      return;
    }
    const i = tfDragIndex;
    const [x, y] = tfFromEvent(event);
    // A point cannot pass its neighbours: the fractions stay ascending.
    const lo = i > 0 ? tfPoints[i - 1][0] + TF_GAP : 0;
    const hi = i < tfPoints.length - 1 ? tfPoints[i + 1][0] - TF_GAP : 1;
    tfPoints[i] = [Math.round(Math.min(hi, Math.max(lo, x)) * 1e4) / 1e4, y];
    tfMoved = true;
    drawTf();
    sendOpacity.soon();
  });

  ui.tf.addEventListener('lostpointercapture', () => {
    if (!tfEditing) return;
    tfEditing = false;
    tfDragIndex = -1;
    drawTf();
    if (tfMoved) sendOpacity.now();  // the points as released (a click on a point sends nothing)
    tfMoved = false;
  });
  ui.tf.addEventListener('dblclick', (event) => tfRemove(tfHit(event)));
  ui.tf.addEventListener('contextmenu', (event) => event.preventDefault());

  // ---------------------------------------------------------------- particle controls

  const sendRadius = throttledSender(() => ({type: 'style', radius_scale: Number(ui.radiusScale.value)}), 100);
  holdWhileEditing(ui.radiusScale);
  ui.radiusScale.addEventListener('input', () => {
    ui.radiusScaleValue.textContent = Number(ui.radiusScale.value).toFixed(2);
    sendRadius.soon();
  });
  ui.radiusScale.addEventListener('change', () => sendRadius.now());

  ui.colourBy.addEventListener('change', () => {
    ui.colourMapParticles.disabled = ui.colourBy.value === 'stored';
    send({type: 'style', colour_by: ui.colourBy.value});
  });
  ui.colourMapParticles.addEventListener('change',
    () => send({type: 'style', colour_map: ui.colourMapParticles.value}));

  // ---------------------------------------------------------------- start

  // Draws the editor when it is first laid out, when the volume section is shown, and on resize.
  new ResizeObserver(drawTf).observe(ui.tf);
  connect();
})();
