// The Backlot dashboard: a page of our own over the management API (/api/...), no framework.
// The token is kept in sessionStorage and sent as "Authorization: Bearer"; never in a URL or a
// cookie. Everything shown is built with DOM nodes and text nodes (never parsed markup), so nothing the
// server returns is ever read as markup.
'use strict';

(function () {
  const TOKEN_KEY = 'backlot.token';
  const APP_KEY = 'backlot.app';
  const CHANNELS = ['internal', 'external', 'production'];
  const ROLLOUT_STEPS = [1, 5, 10, 25, 50, 100];
  const DEFAULT_QUOTA = 200000000000; // Repository's default quota, when the API does not report one
  const DAY = 86400000;

  const state = { who: null, apps: null, renderId: 0, timer: null };

  // ---- helpers ---------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message, hint, context) {
      super(message);
      this.status = status;
      this.code = code;
      this.hint = hint;
      this.context = context;
    }
  }

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'on') {
        for (const [event, handler] of Object.entries(value)) el.addEventListener(event, handler);
      } else if (key === 'class') {
        el.className = value;
      } else if (key === 'value') {
        el.value = value;
      } else {
        el.setAttribute(key, value === true ? '' : String(value));
      }
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function svg(tag, attrs, ...children) {
    const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
    for (const child of children) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return el;
  }

  function bytes(n) {
    if (n === null || n === undefined) return '—';
    const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
    let value = n;
    let unit = 0;
    while (value >= 1000 && unit < units.length - 1) {
      value /= 1000;
      unit += 1;
    }
    return unit === 0 ? `${n} bytes` : `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
  }

  function percent(p) {
    return `${Number(p).toLocaleString('en', { maximumFractionDigits: 2 })} %`;
  }

  function time(text) {
    if (!text) return '—';
    const d = new Date(text);
    return Number.isNaN(d.getTime()) ? text : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }

  function enc(s) {
    return encodeURIComponent(s);
  }

  function table(headers, rows, attrs) {
    return h('div', { class: 'table-wrap' },
      h('table', attrs || {},
        h('thead', {}, h('tr', {}, headers.map((t) => h('th', { scope: 'col', class: /^(Size|Requests|Bytes|Install size|Versions)/.test(t) ? 'num' : null }, t)))),
        h('tbody', {}, rows)));
  }

  function badge(text, kind) {
    return h('span', { class: `badge ${kind || text}` }, text);
  }

  function say(message, kind) {
    const el = document.getElementById('status');
    el.className = `status ${kind || 'ok'}`;
    el.textContent = message;
  }

  function describe(error) {
    if (error instanceof ApiError) {
      let text = `${error.status} ${error.code}: ${error.message}`;
      if (error.context) text += ` (${error.context})`;
      if (error.hint) text += `. ${error.hint}`;
      return text;
    }
    return `the server could not be reached: ${error && error.message ? error.message : error}`;
  }

  function sayError(what, error) {
    say(`${what} failed — ${describe(error)}`, 'error');
  }

  function can(role) {
    const mine = state.who && state.who.role;
    return mine === 'admin' || mine === role;
  }

  function notAvailable(what, error) {
    return h('p', { class: 'notice', 'data-unavailable': 'true' },
      `${what} is not available on this server (${error.status}: ${error.message}). `,
      'A server with the audit, download and key routes of the management API shows it here.');
  }

  // ---- the API ---------------------------------------------------------------------------

  async function api(method, path, body) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const headers = { Accept: 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error', referrerPolicy: 'no-referrer' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const text = await response.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (e) {
        data = null;
      }
    }
    if (!response.ok) {
      const e = (data && data.error) || {};
      const error = new ApiError(response.status, e.code || `http${response.status}`, e.message || response.statusText, e.hint, e.context);
      if (response.status === 401 && token) {
        // The token was revoked, rotated or expired: back to the sign-in page, saying why, and
        // at once nothing on the page says who was signed in.
        sessionStorage.removeItem(TOKEN_KEY);
        state.who = null;
        state.refused = describe(error);
        showFrame(false);
        setTimeout(render, 0);
      }
      throw error;
    }
    return data;
  }

  // Who the token is: GET /api/whoami; on a server without it, the role is probed with calls
  // that can change nothing (each needs one role, and fails on its invalid "-" ID once past the role check).
  async function identify() {
    try {
      const w = await api('GET', '/api/whoami');
      return { role: w.role, label: w.label, person: w.person, tokenId: w.tokenId, expires: w.expires, probed: false };
    } catch (e) {
      if (!(e instanceof ApiError) || (e.status !== 404 && e.status !== 405)) throw e;
    }
    await api('GET', '/api/apps');
    const allowed = async (method, path, body) => {
      try {
        await api(method, path, body);
        return true;
      } catch (e) {
        if (e instanceof ApiError && e.status === 403) return false;
        if (e instanceof ApiError && e.status === 401) throw e;
        return true;
      }
    };
    let role = 'reader';
    if (await allowed('GET', '/api/tokens')) role = 'admin';
    else if (await allowed('POST', '/api/apps/-/packs/-/rollout', {})) role = 'reviewer';
    else if (await allowed('POST', '/api/apps/-/packs', {})) role = 'uploader';
    return { role, label: null, person: null, tokenId: null, expires: null, probed: true };
  }

  async function apps(refresh) {
    if (!state.apps || refresh) state.apps = (await api('GET', '/api/apps')).apps;
    return state.apps;
  }

  async function channelStates(app) {
    const states = await Promise.all(CHANNELS.map((c) => api('GET', `/api/apps/${enc(app)}/channels/${c}`)));
    return Object.fromEntries(CHANNELS.map((c, i) => [c, states[i]]));
  }

  // Where each version of a pack is: {version: ["production (live)", ...]}.
  function placesOf(pack, channels) {
    const places = {};
    const add = (v, text) => {
      (places[v] = places[v] || []).push(text);
    };
    for (const c of CHANNELS) {
      const entry = channels[c].packs.find((p) => p.pack === pack);
      if (!entry) continue;
      if (entry.live) add(entry.live.version, `${c} (live)`);
      if (entry.candidate) add(entry.candidate.version, `${c} (candidate, ${percent(entry.candidate.rolloutPercent)})`);
    }
    return places;
  }

  function describeOnChannel(entry) {
    if (!entry) return [badge('not released', 'none')];
    const parts = [];
    parts.push(entry.live ? h('span', {}, badge('live', 'live'), ` version ${entry.live.version}`) : h('span', { class: 'muted' }, 'nothing live'));
    if (entry.candidate) {
      const halted = Number(entry.candidate.rolloutPercent) === 0;
      parts.push(' · ', h('span', {}, badge(halted ? 'halted' : 'candidate', halted ? 'halted' : 'candidate'),
        ` version ${entry.candidate.version} at ${percent(entry.candidate.rolloutPercent)}`));
    }
    return parts;
  }

  // ---- the frame -------------------------------------------------------------------------

  function route() {
    const parts = location.hash.replace(/^#\/?/, '').split('/').filter((p) => p !== '').map((p) => {
      try {
        return decodeURIComponent(p);
      } catch (e) {
        return '';
      }
    });
    return { page: parts[0] || 'apps', args: parts.slice(1) };
  }

  function stopPolling() {
    if (state.timer) clearTimeout(state.timer);
    state.timer = null;
  }

  // Calls `step` every `ms` while the page that started it is shown.
  function poll(id, ms, step) {
    const tick = async () => {
      if (id !== state.renderId) return;
      try {
        await step();
      } catch (e) {
        if (id === state.renderId) sayError('Refreshing', e);
      }
      if (id === state.renderId) state.timer = setTimeout(tick, ms);
    };
    state.timer = setTimeout(tick, ms);
  }

  function showFrame(signedIn) {
    document.getElementById('nav').hidden = !signedIn;
    document.getElementById('who').hidden = !signedIn;
    if (!signedIn) {
      // Nothing of the last token stays on the page: not its name, not its role.
      document.getElementById('who-text').textContent = '';
      document.getElementById('who-text').removeAttribute('data-role');
      return;
    }
    const who = state.who;
    const name = who.label ? `“${who.label}”` : 'this token';
    document.getElementById('who-text').textContent =
      `Signed in with ${name}, role ${who.role}${who.probed ? ' (found by trying; the server has no /api/whoami)' : ''}`;
    document.getElementById('who-text').setAttribute('data-role', who.role);
    const page = route().page;
    for (const a of document.querySelectorAll('#nav a')) {
      a.hidden = a.dataset.needs ? !can(a.dataset.needs) : false;
      if (a.dataset.page === (page === 'pack' ? 'apps' : page)) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
  }

  async function render() {
    stopPolling();
    state.renderId += 1;
    const id = state.renderId;
    const main = document.getElementById('main');
    if (!sessionStorage.getItem(TOKEN_KEY)) {
      showFrame(false);
      pageSignIn(main);
      return;
    }
    if (!state.who) {
      main.replaceChildren(h('p', { class: 'muted' }, 'Checking the token…'));
      try {
        state.who = await identify();
      } catch (e) {
        if (id !== state.renderId) return;
        if (e instanceof ApiError && e.status === 401) return; // api() already went back to sign-in
        if (e instanceof ApiError) {
          // The server refused the token itself (too long, say): forget it and ask again.
          sessionStorage.removeItem(TOKEN_KEY);
          showFrame(false);
          pageSignIn(main);
          say(`The server could not check the token — ${describe(e)}`, 'error');
          return;
        }
        showFrame(false);
        main.replaceChildren(h('p', { class: 'notice error' }, `The server could not check the token — ${describe(e)}`),
          h('p', {}, h('button', { type: 'button', on: { click: () => { signOut(); } } }, 'Sign in again')));
        return;
      }
      if (id !== state.renderId) return;
    }
    showFrame(true);
    const { page, args } = route();
    const pages = {
      apps: pageApps, pack: pagePack, channels: pageChannels, releases: pageReleases, tokens: pageTokens,
      keys: pageKeys, activity: pageActivity, downloads: pageDownloads,
    };
    const show = pages[page] || pageApps;
    main.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
    try {
      const content = await show(id, ...args);
      if (id !== state.renderId) return;
      main.replaceChildren(content);
      main.setAttribute('data-page', page);
    } catch (e) {
      if (id !== state.renderId) return;
      main.replaceChildren(h('p', { class: 'notice error' }, `This page could not be loaded — ${describe(e)}`));
    }
  }

  function go(hash) {
    if (location.hash === hash) render();
    else location.hash = hash;
  }

  // The app a per-app page shows: the one in the address, else the last one chosen, else the first.
  // An app in the address that does not exist is `unknown`: the page says so and shows no other
  // app's figures or controls in its place.
  async function chooseApp(args, page) {
    const list = await apps(true);
    if (args[0] && !list.some((a) => a.id === args[0])) return { app: null, unknown: args[0], info: null, picker: null };
    let app = args[0] || sessionStorage.getItem(APP_KEY);
    if (!list.some((a) => a.id === app)) app = list.length ? list[0].id : null;
    if (app) sessionStorage.setItem(APP_KEY, app);
    const picker = list.length > 1
      ? h('div', { class: 'field' },
        h('label', { for: 'app-picker' }, 'App'),
        h('select', { id: 'app-picker', on: { change: (e) => go(`#/${page}/${enc(e.target.value)}`) } },
          list.map((a) => h('option', { value: a.id, selected: a.id === app }, a.id))))
      : null;
    return { app, info: list.find((a) => a.id === app), picker };
  }

  function noApps() {
    return h('p', { class: 'notice' }, 'There is no app yet. An admin makes one with: backlot apps create APP');
  }

  // The page of an app that does not exist: says which, and where to look, with nothing to act on.
  function noSuchApp(title, app) {
    const known = (state.apps || []).map((a) => a.id);
    return h('div', {}, h('h1', {}, title),
      h('p', { class: 'notice error', 'data-no-app': app },
        `There is no app named “${app}” on this server. `,
        known.length ? `Its apps are: ${known.join(', ')}. ` : 'It has no app yet. ',
        h('a', { href: '#/apps' }, 'See the apps'), '.'));
  }

  // ---- sign-in ---------------------------------------------------------------------------

  function pageSignIn(main) {
    const input = h('input', {
      id: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true,
      'aria-describedby': 'token-help',
    });
    const form = h('form', { class: 'card signin', method: 'post', on: { submit: signIn } },
      h('h1', {}, 'Sign in'),
      state.refused ? h('p', { class: 'notice error', id: 'refused' }, `The server refused the token — ${state.refused}`) : null,
      h('div', { class: 'field' },
        h('label', { for: 'token' }, 'API token'),
        input,
        h('p', { id: 'token-help', class: 'muted' },
          'A token made with backlot tokens create (or the admin-token file of the data folder). ',
          'It stays in this tab only (sessionStorage) and is sent to this server as a bearer header.')),
      h('p', {}, h('button', { type: 'submit', id: 'sign-in', class: 'primary' }, 'Sign in')));
    main.replaceChildren(form);
    input.focus();
  }

  function signIn(event) {
    event.preventDefault();
    const token = document.getElementById('token').value.trim();
    if (!token) return;
    // A token is printable ASCII with no space (blt_ and 64 hex digits); anything else cannot be
    // sent as a header, and is refused here with the reason.
    if (!/^[\x21-\x7e]{1,4096}$/.test(token)) {
      say('That is not an API token: a token is one word of printable ASCII (it starts with blt_), at most 4,096 characters.', 'error');
      return;
    }
    try {
      sessionStorage.setItem(TOKEN_KEY, token);
    } catch (e) {
      say(`The browser would not keep the token in this tab: ${e.message}`, 'error');
      return;
    }
    state.who = null;
    state.apps = null;
    state.refused = null;
    say('');
    go(location.hash && location.hash !== '#/' ? location.hash : '#/apps');
  }

  function signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
    state.who = null;
    state.apps = null;
    state.refused = null;
    say('Signed out.');
    go('#/apps');
  }

  // ---- Apps ------------------------------------------------------------------------------

  async function pageApps() {
    const list = await apps(true);
    if (!list.length) return h('div', {}, h('h1', {}, 'Apps'), noApps());
    const cards = await Promise.all(list.map(appCard));
    return h('div', {}, h('h1', {}, 'Apps'), cards);
  }

  async function appCard(app) {
    const [packs, channels] = await Promise.all([
      api('GET', `/api/apps/${enc(app.id)}/packs`).then((r) => r.packs),
      channelStates(app.id),
    ]);
    // Apple's quota rule: per pack, the largest retained version that did not fail; summed.
    const versionLists = await Promise.all(packs.map((p) =>
      api('GET', `/api/apps/${enc(app.id)}/packs/${enc(p.id)}/versions`).then((r) => r.versions)));
    let used = 0;
    for (const versions of versionLists) {
      used += versions.filter((v) => v.state !== 'FAILED').reduce((m, v) => Math.max(m, v.size), 0);
    }
    const quota = typeof app.quotaBytes === 'number' ? app.quotaBytes : DEFAULT_QUOTA;
    const share = quota > 0 ? (100 * used) / quota : 0;
    const rows = packs.map((p) => h('tr', { 'data-pack-row': p.id },
      h('th', { scope: 'row' }, h('a', { href: `#/pack/${enc(app.id)}/${enc(p.id)}`, 'data-pack': p.id }, p.id)),
      h('td', { class: 'num' }, p.versions),
      h('td', {}, p.latest === null ? '—' : `version ${p.latest}`),
      CHANNELS.map((c) => h('td', { 'data-channel': c }, describeOnChannel(channels[c].packs.find((e) => e.pack === p.id))))));
    return h('section', { class: 'card', 'data-app': app.id, 'aria-labelledby': `app-${app.id}` },
      h('h2', { id: `app-${app.id}` }, app.id),
      h('p', { class: 'row' },
        h('span', {}, `Four-eyes rule: ${app.fourEyes ? 'on (the token that asks for a release cannot approve it)' : 'off'}`),
        h('a', { href: `#/channels/${enc(app.id)}` }, 'Channels'),
        h('a', { href: `#/releases/${enc(app.id)}` }, 'Release requests'),
        h('a', { href: `#/activity/${enc(app.id)}` }, 'Activity'),
        h('a', { href: `#/downloads/${enc(app.id)}` }, 'Downloads')),
      h('div', { class: 'row' },
        h('label', { for: `quota-${app.id}` }, 'Storage'),
        h('meter', { id: `quota-${app.id}`, min: 0, max: quota, value: used, high: quota * 0.9, optimum: 0 }),
        h('span', { 'data-storage': app.id },
          `${bytes(used)} of ${bytes(quota)} (${share.toFixed(share < 1 ? 3 : 1)} %)`,
          typeof app.quotaBytes === 'number' ? '' : ' — the default quota: this server does not report the app\'s own')),
      packs.length
        ? table(['Pack', 'Versions', 'Latest', 'Internal', 'External', 'Production'], rows)
        : h('p', { class: 'muted' }, 'No pack yet: the first upload makes one (backlot upload PACK --app APP).'));
  }

  // ---- A pack ----------------------------------------------------------------------------

  async function pagePack(id, app, pack) {
    if (!app || !pack) return h('p', { class: 'notice' }, 'Choose a pack on the Apps page.');
    const body = h('tbody', {});
    const summary = h('p', { class: 'muted', 'aria-live': 'polite' });
    const fill = async () => {
      const [versions, channels] = await Promise.all([
        api('GET', `/api/apps/${enc(app)}/packs/${enc(pack)}/versions`).then((r) => r.versions),
        channelStates(app),
      ]);
      const places = placesOf(pack, channels);
      body.replaceChildren(...versions.map((v) => versionRow(app, pack, v, places[v.version] || [])));
      const busy = versions.filter((v) => v.state === 'AWAITING_UPLOAD' || v.state === 'PROCESSING').length;
      summary.textContent = `${versions.length} version${versions.length === 1 ? '' : 's'}` +
        (busy ? `, ${busy} still arriving or being processed (this page refreshes every second)` : '') + '.';
    };
    await fill();
    poll(id, 1000, fill);
    return h('div', {},
      h('p', {}, h('a', { href: '#/apps' }, 'Apps'), ` › ${app} › `, h('strong', {}, pack)),
      h('h1', {}, `Pack ${pack}`),
      h('p', { class: 'row' }, h('a', { href: `#/channels/${enc(app)}` }, 'Channels of this app'), h('a', { href: `#/releases/${enc(app)}` }, 'Release requests')),
      summary,
      h('div', { class: 'table-wrap' },
        h('table', { id: 'versions' },
          h('thead', {}, h('tr', {},
            ['Version', 'State', 'Size', 'Install size', 'Format', 'SHA-256', 'Live on', 'Actions'].map((t) =>
              h('th', { scope: 'col', class: /Size/i.test(t) ? 'num' : null }, t)))),
          body)));
  }

  // A version's variants (see the variants guide in docs): each device installs the shared files and one of each.
  function variantsText(variants) {
    const parts = [];
    if (variants.textureFormats.length) {
      parts.push(`texture formats ${variants.textureFormats.join(', ')} (default ${variants.defaultTextureFormat})`);
    }
    if (variants.deviceTiers.length) parts.push(`device tiers ${variants.deviceTiers.join(', ')}`);
    return `variants: ${parts.join('; ')}`;
  }

  function versionRow(app, pack, v, places) {
    let stateCell;
    if (v.state === 'AWAITING_UPLOAD') {
      const share = v.size ? (100 * v.received) / v.size : 0;
      stateCell = [badge('AWAITING_UPLOAD'), h('br'),
        h('label', { class: 'muted', for: `progress-${v.version}` }, `uploading: ${bytes(v.received)} of ${bytes(v.size)} (${share.toFixed(0)} %)`), ' ',
        h('progress', { id: `progress-${v.version}`, max: v.size || 1, value: v.received })];
    } else if (v.state === 'FAILED') {
      stateCell = [badge('FAILED'), h('br'), h('span', { class: 'reason' }, `Reason: ${v.reason || 'not given'}`)];
    } else if (v.state === 'PROCESSING') {
      stateCell = [badge('PROCESSING'), ' being verified'];
    } else {
      stateCell = [badge(v.state)];
    }
    const actions = h('td', { class: 'actions' });
    if (can('admin') && places.length === 0) {
      actions.append(h('button', {
        type: 'button', class: 'action danger', 'data-action': 'delete-version', 'aria-label': `Delete version ${v.version} of ${pack}`,
        on: { click: () => deleteVersion(app, pack, v.version) },
      }, 'Delete'));
    } else if (places.length) {
      actions.append(h('span', { class: 'muted' }, 'in use'));
    }
    if (v.state === 'COMPLETE' && can('uploader')) actions.append(releaseForm(app, pack, v.version));
    return h('tr', { 'data-version': v.version },
      h('th', { scope: 'row' }, String(v.version), v.notes ? h('div', { class: 'notes muted' }, v.notes) : null),
      h('td', { class: 'state', 'data-state': v.state }, stateCell),
      h('td', { class: 'num', title: `${v.size} bytes` }, bytes(v.size)),
      h('td', { class: 'num' }, bytes(v.installSize)),
      h('td', {}, v.format, v.variants ? h('div', { class: 'muted', 'data-variants': '' }, variantsText(v.variants)) : null),
      h('td', {}, v.archiveSHA256 ? h('code', { class: 'digest' }, v.archiveSHA256) : h('span', { class: 'muted' }, 'not yet known')),
      h('td', { 'data-places': '' }, places.length ? places.join(', ') : h('span', { class: 'muted' }, 'on no channel')),
      actions);
  }

  // A release made on the page: the channel, a rollout share on production, and a confirmation
  // that says what the dry run found would change before anything does.
  // What was chosen in each version's form, kept across the page's refreshes (it redraws its rows every second).
  const releaseChoices = new Map();

  function releaseForm(app, pack, version) {
    const key = `${app}/${pack}/${version}`;
    const chosen = releaseChoices.get(key) || { channel: 'internal', share: '' };
    const remember = () => releaseChoices.set(key, { channel: channel.value, share: share.value });
    const channel = h('select', { 'data-release-channel': '', 'aria-label': `Channel to release version ${version} on`, on: { change: remember } },
      CHANNELS.map((c) => h('option', { value: c }, c)));
    channel.value = chosen.channel;
    const share = h('input', {
      type: 'number', min: '0.01', max: '100', step: '0.01', inputmode: 'decimal', 'data-release-rollout': '',
      placeholder: 'all', 'aria-label': `Rollout share of version ${version} on production (%)`, on: { input: remember },
    });
    share.value = chosen.share;
    return h('span', { class: 'release-form' }, channel, share, h('button', {
      type: 'button', class: 'action primary', 'data-action': 'release', 'aria-label': `Release version ${version} of ${pack}`,
      on: { click: () => releaseVersion(app, pack, version, channel.value, share.value) },
    }, 'Release…'));
  }

  async function releaseVersion(app, pack, version, channel, shareText) {
    const body = { pack, version, channel };
    if (shareText.trim() !== '') body.rollout = Number(shareText);
    let plan;
    try {
      plan = await api('POST', `/api/apps/${enc(app)}/releases`, Object.assign({ dryRun: true }, body));
    } catch (e) {
      sayError(`Checking the release of ${pack} version ${version} on ${channel}`, e);
      return;
    }
    const side = (s) => s.version === null ? 'nothing'
      : `version ${s.version} for ${s.rolloutPercent === null ? 'every device (100 %)' : `${percent(s.rolloutPercent)} of devices`}`;
    const change = `Release ${pack} version ${version} on ${channel} of ${app}: from ${side(plan.change.from)} ` +
      `to ${side(plan.change.to)}. ` +
      (plan.needsApproval ? 'A reviewer must approve it before devices get it.' : 'Devices get it at their next check.');
    if (!window.confirm(`${change}\n\nGo ahead?`)) {
      say(`Nothing changed: ${pack} version ${version} was not released on ${channel}.`);
      return;
    }
    try {
      const r = await api('POST', `/api/apps/${enc(app)}/releases`, body);
      say(r.released ? `Released ${pack} version ${version} on ${channel}.`
        : `Release request #${r.request.id}: ${pack} version ${version} on ${channel} awaits a reviewer.`);
      render();
    } catch (e) {
      sayError(`Releasing ${pack} version ${version} on ${channel}`, e);
    }
  }

  async function deleteVersion(app, pack, version) {
    if (!window.confirm(`Delete version ${version} of ${pack}? Its archive is removed; this cannot be undone.`)) return;
    try {
      await api('DELETE', `/api/apps/${enc(app)}/packs/${enc(pack)}/versions/${version}`);
      say(`Version ${version} of ${pack} was deleted.`);
      render();
    } catch (e) {
      sayError(`Deleting version ${version} of ${pack}`, e);
    }
  }

  // ---- Channels --------------------------------------------------------------------------

  async function pageChannels(id, ...args) {
    const { app, picker, unknown } = await chooseApp(args, 'channels');
    if (unknown) return noSuchApp('Channels', unknown);
    if (!app) return h('div', {}, h('h1', {}, 'Channels'), noApps());
    const channels = await channelStates(app);
    // Each production candidate's phased rollout, if it has one running or halted (404: never had one).
    const phasesOf = new Map();
    for (const p of channels.production.packs.filter((p) => p.candidate)) {
      try {
        const phases = await api('GET', `/api/apps/${enc(app)}/packs/${enc(p.pack)}/phases`);
        if (phases.version === p.candidate.version && (phases.state === 'running' || phases.state === 'halted')) phasesOf.set(p.pack, phases);
      } catch (e) {
        if (!(e instanceof ApiError) || e.status !== 404) throw e;
      }
    }
    const sections = CHANNELS.map((c) => {
      const s = channels[c];
      const rows = s.packs.map((p) => channelRow(app, c, p, c === 'production' ? phasesOf.get(p.pack) : undefined));
      return h('section', { class: 'card', 'data-channel-card': c },
        h('h2', {}, c[0].toUpperCase() + c.slice(1)),
        h('p', { class: 'muted' },
          s.catalogVersion === null ? 'Nothing published on this channel yet.'
            : `Catalog version ${s.catalogVersion}, expires ${time(s.expires)}, signed by key ${s.signingKey.slice(0, 16)}…`),
        rows.length ? table(['Pack', 'Live', 'Candidate', 'Actions'], rows) : h('p', { class: 'muted' }, 'No pack on this channel.'));
    });
    return h('div', {}, h('h1', {}, `Channels of ${app}`), picker,
      can('reviewer') ? h('p', { class: 'muted' },
        'A staged rollout (production only) offers devices the candidate by share; 0 % halts it, 100 % promotes it to live. ',
        'Roll back drops the candidate, or puts the version live before the current one back.') : null,
      sections);
  }

  function channelRow(app, channel, p, phases) {
    const live = p.live ? h('span', {}, badge('live', 'live'), ` version ${p.live.version}`) : h('span', { class: 'muted' }, 'nothing live');
    let candidate = h('span', { class: 'muted' }, 'none');
    if (p.candidate) {
      const halted = Number(p.candidate.rolloutPercent) === 0;
      candidate = h('span', { 'data-rollout': p.candidate.rolloutPercent },
        badge(halted ? 'halted' : 'candidate', halted ? 'halted' : 'candidate'),
        ` version ${p.candidate.version} at ${percent(p.candidate.rolloutPercent)}`,
        phases ? h('span', { class: 'muted', 'data-phases': phases.state }, ` — ${phasesText(phases)}`) : null);
    }
    const actions = h('td', { class: 'actions' });
    if (can('reviewer')) {
      if (channel === 'production' && p.candidate) {
        const current = Number(p.candidate.rolloutPercent);
        const inputId = `rollout-${p.pack}`;
        const input = h('input', { id: inputId, type: 'number', min: 0, max: 100, step: '0.01', value: String(current), 'data-rollout-input': p.pack });
        const up = ROLLOUT_STEPS.find((s) => s > current);
        const down = [...ROLLOUT_STEPS].reverse().find((s) => s < current);
        append(actions, [
          h('label', { for: inputId }, `Rollout of ${p.pack} (%)`), input,
          h('button', { type: 'button', class: 'action primary', 'data-action': 'set-rollout', 'data-pack': p.pack, on: { click: () => setRollout(app, p, Number(input.value), phases) } }, 'Set'),
          up !== undefined && up < 100 ? h('button', { type: 'button', class: 'action', 'data-action': 'raise', on: { click: () => setRollout(app, p, up, phases) } }, `Raise to ${up} %`) : null,
          down !== undefined ? h('button', { type: 'button', class: 'action', 'data-action': 'lower', on: { click: () => setRollout(app, p, down, phases) } }, `Lower to ${down} %`) : null,
          h('button', { type: 'button', class: 'action', 'data-action': 'promote', on: { click: () => setRollout(app, p, 100, phases) } }, 'Promote (100 %)'),
          current > 0 ? h('button', { type: 'button', class: 'action danger', 'data-action': 'halt', on: { click: () => setRollout(app, p, 0, phases) } }, 'Halt (0 %)') : null]);
      }
      actions.append(
        h('button', { type: 'button', class: 'action', 'data-action': 'rollback', 'data-pack': p.pack, on: { click: () => rollback(app, p, channel) } }, 'Roll back'),
        h('button', { type: 'button', class: 'action danger', 'data-action': 'withdraw', 'data-pack': p.pack, on: { click: () => withdraw(app, p, channel) } }, 'Withdraw'));
    }
    return h('tr', { 'data-pack-row': p.pack }, h('th', { scope: 'row' }, h('a', { href: `#/pack/${enc(app)}/${enc(p.pack)}` }, p.pack)), h('td', {}, live), h('td', {}, candidate), actions);
  }

  // A phased rollout in words: its steps, where it is, and why it halted.
  function phasesText(phases) {
    const steps = phases.steps.map((s) => percent(s)).join(' → ');
    const every = phases.stepSeconds % 86400 === 0 ? `${phases.stepSeconds / 86400} d` : phases.stepSeconds % 3600 === 0 ? `${phases.stepSeconds / 3600} h` : `${phases.stepSeconds} s`;
    if (phases.state === 'halted') return `phased rollout (${steps}) halted by the server: ${phases.reason || 'no reason given'}`;
    return `phased rollout ${steps}, a step every ${every}: step ${phases.step + 1} of ${phases.steps.length} since ${time(phases.stepSince)}`;
  }

  // What a production rollout change does to devices, in words: which pack and version, on which
  // channel of which app, from what share to what share (asked before anything is sent).
  function rolloutChange(app, p, value, phases) {
    const ends = phases && phases.state === 'running' ? ` This ends its phased rollout (${phases.steps.map((s) => percent(s)).join(' → ')}): the server takes no further step.` : '';
    return rolloutChangeText(app, p, value) + ends;
  }

  function rolloutChangeText(app, p, value) {
    const c = p.candidate;
    const from = Number(c.rolloutPercent);
    const live = p.live ? `version ${p.live.version}` : 'nothing';
    const where = `${p.pack} on production of ${app}`;
    if (value === 100) {
      return `Promote ${where}: version ${c.version} becomes the live version for every device (100 %, from ${percent(from)}); ` +
        `${live} is no longer offered.`;
    }
    if (value === 0) {
      return `Halt ${where}: version ${c.version} is offered to no device (0 %, from ${percent(from)}); every device is offered ${live}. ` +
        'Devices that installed it keep it.';
    }
    return `Change the rollout of ${where}: version ${c.version} is offered to ${percent(value)} of devices, from ${percent(from)}; ` +
      `the others get ${live}.`;
  }

  async function setRollout(app, p, value, phases) {
    const pack = p.pack;
    if (!Number.isFinite(value) || value < 0 || value > 100) {
      say('The rollout is a number from 0 to 100.', 'error');
      return;
    }
    if (value === Number(p.candidate.rolloutPercent)) {
      say(`The rollout of ${pack} on production is ${percent(value)} already: nothing to change.`);
      return;
    }
    if (!window.confirm(`${rolloutChange(app, p, value, phases)}\n\nGo ahead?`)) {
      say(`Nothing changed: the rollout of ${pack} stays at ${percent(p.candidate.rolloutPercent)}.`);
      return;
    }
    try {
      const r = await api('POST', `/api/apps/${enc(app)}/packs/${enc(pack)}/rollout`, { percent: value });
      say(r.candidate ? `The rollout of ${pack} on production is now ${percent(r.candidate.rolloutPercent)}.`
        : `${pack} version ${r.live ? r.live.version : '?'} is now live on production (promoted).`);
      render();
    } catch (e) {
      sayError(`Setting the rollout of ${pack} to ${percent(value)}`, e);
    }
  }

  async function rollback(app, p, channel) {
    const pack = p.pack;
    const change = p.candidate
      ? `the candidate version ${p.candidate.version} (offered to ${percent(p.candidate.rolloutPercent)} of devices) is dropped; ` +
        `every device is offered ${p.live ? `version ${p.live.version}` : 'nothing'}`
      : `version ${p.live ? p.live.version : '?'} stops being live; every device is offered the version that was live before it`;
    if (!window.confirm(`Roll back ${pack} on ${channel} of ${app}: ${change}. Devices get it at their next check.\n\nGo ahead?`)) {
      say(`Nothing changed: ${pack} on ${channel} was not rolled back.`);
      return;
    }
    try {
      const r = await api('POST', `/api/apps/${enc(app)}/packs/${enc(pack)}/rollback`, { channel });
      say(`${pack} on ${channel} is back to version ${r.version}.`);
      render();
    } catch (e) {
      sayError(`Rolling back ${pack} on ${channel}`, e);
    }
  }

  async function withdraw(app, p, channel) {
    const pack = p.pack;
    const versions = [p.live ? `live version ${p.live.version}` : null,
      p.candidate ? `candidate version ${p.candidate.version} (${percent(p.candidate.rolloutPercent)})` : null].filter(Boolean).join(' and ');
    const both = Boolean(p.live && p.candidate);
    if (!window.confirm(`Withdraw ${pack} from ${channel} of ${app}: ${versions || 'it'} ${both ? 'are' : 'is'} no longer offered to any device ` +
      '(100 % of devices on this channel), and devices report the pack as obsolete.\n\nGo ahead?')) {
      say(`Nothing changed: ${pack} stays on ${channel}.`);
      return;
    }
    try {
      await api('POST', `/api/apps/${enc(app)}/packs/${enc(pack)}/withdraw`, { channel });
      say(`${pack} was withdrawn from ${channel}.`);
      render();
    } catch (e) {
      sayError(`Withdrawing ${pack} from ${channel}`, e);
    }
  }

  // ---- Release requests ------------------------------------------------------------------

  async function pageReleases(id, ...args) {
    const { app, info, picker, unknown } = await chooseApp(args, 'releases');
    if (unknown) return noSuchApp('Release requests', unknown);
    if (!app) return h('div', {}, h('h1', {}, 'Release requests'), noApps());
    // Only the statuses the server knows: a link cannot make the page repeat text of its own.
    const statuses = ['all', 'pending', 'approved', 'rejected', 'superseded'];
    const status = statuses.includes(args[1]) ? args[1] : 'all';
    const query = status === 'all' ? '' : `?status=${enc(status)}`;
    const releases = (await api('GET', `/api/apps/${enc(app)}/releases${query}`)).releases.slice().reverse();
    const filter = h('div', { class: 'field' },
      h('label', { for: 'release-status' }, 'Show'),
      h('select', { id: 'release-status', on: { change: (e) => go(`#/releases/${enc(app)}/${e.target.value}`) } },
        statuses.map((s) => h('option', { value: s, selected: s === status }, s))));
    const rows = releases.map((r) => releaseRow(app, info, r));
    return h('div', {}, h('h1', {}, `Release requests of ${app}`),
      h('div', { class: 'row' }, picker, filter),
      info && info.fourEyes ? h('p', { class: 'notice', 'data-four-eyes': 'on' },
        'Four-eyes rule on: the token that asked for a release cannot approve it; another reviewer must.') : null,
      rows.length ? table(['Request', 'Channel', 'Pack', 'Rollout', 'Status', 'Asked', 'Decided', 'Actions'], rows)
        : h('p', { class: 'muted' }, 'No request here. Releases to external and production are asked for with backlot release.'));
  }

  function releaseRow(app, info, r) {
    const actions = h('td', { class: 'actions' });
    if (r.status === 'pending' && can('reviewer')) {
      const own = info && info.fourEyes && state.who.tokenId !== null && r.requestedBy && r.requestedBy.id === state.who.tokenId;
      if (own) {
        actions.append(h('span', { class: 'muted' }, 'You asked for this one: another reviewer decides (four eyes).'));
      } else {
        const reasonId = `reason-${r.id}`;
        const reason = h('input', { id: reasonId, type: 'text', maxlength: 2000, placeholder: 'why' });
        actions.append(
          h('button', { type: 'button', class: 'action primary', 'data-action': 'approve', on: { click: () => decide(app, r.id, 'approve', undefined, r) } }, 'Approve'),
          h('label', { for: reasonId }, 'Reason'), reason,
          h('button', { type: 'button', class: 'action danger', 'data-action': 'reject', on: { click: () => decide(app, r.id, 'reject', reason.value) } }, 'Reject'));
      }
    }
    return h('tr', { 'data-request': r.id },
      h('th', { scope: 'row' }, `#${r.id}`),
      h('td', {}, r.channel),
      h('td', {}, h('a', { href: `#/pack/${enc(app)}/${enc(r.pack)}` }, r.pack), ` version ${r.version}`,
        r.notes ? h('div', { class: 'notes muted' }, r.notes) : null),
      h('td', {}, r.rolloutPercent === null ? 'all devices' : percent(r.rolloutPercent)),
      h('td', { class: 'release-status', 'data-status': r.status }, badge(r.status), r.reason ? h('div', {}, `Reason: ${r.reason}`) : null),
      h('td', {}, time(r.requested), h('br'), h('span', { class: 'muted' }, r.requestedBy ? `by ${r.requestedBy.person} (token ${r.requestedBy.id}${r.requestedBy.label ? `, “${r.requestedBy.label}”` : ''})` : 'by a token since removed')),
      h('td', {}, r.decided ? [time(r.decided), h('br'), h('span', { class: 'muted' }, r.decidedBy ? `by ${r.decidedBy.person} (token ${r.decidedBy.id}${r.decidedBy.label ? `, “${r.decidedBy.label}”` : ''})` : '')] : '—'),
      actions);
  }

  // What approving a request changes for devices: the pack, version, channel and share, against
  // what the channel offers now (read when asked, not when the page was drawn).
  async function approvalChange(app, r) {
    const now = (await api('GET', `/api/apps/${enc(app)}/channels/${enc(r.channel)}`)).packs.find((e) => e.pack === r.pack);
    const current = now && now.live ? `version ${now.live.version} is live` : 'nothing of it is live';
    const candidate = now && now.candidate ? `, and version ${now.candidate.version} is a candidate for ${percent(now.candidate.rolloutPercent)}` : '';
    const share = r.rolloutPercent === null || Number(r.rolloutPercent) === 100
      ? `becomes the live version for every device (100 %)`
      : `is offered to ${percent(r.rolloutPercent)} of devices as a candidate (from 0 %), the others keep ${now && now.live ? `version ${now.live.version}` : 'nothing'}`;
    return `Approve request #${r.id}: ${r.pack} version ${r.version} on ${r.channel} of ${app} ${share}. ` +
      `Now on ${r.channel}: ${current}${candidate}.`;
  }

  async function decide(app, requestId, verb, reason, request) {
    if (verb === 'reject' && !(reason || '').trim()) {
      say(`Say why request #${requestId} is rejected (the Reason field).`, 'error');
      return;
    }
    if (verb === 'approve') {
      let change;
      try {
        change = await approvalChange(app, request);
      } catch (e) {
        sayError(`Reading what request #${requestId} would change`, e);
        return;
      }
      if (!window.confirm(`${change}\n\nGo ahead?`)) {
        say(`Nothing changed: request #${requestId} is still pending.`);
        return;
      }
    }
    try {
      const r = await api('POST', `/api/apps/${enc(app)}/releases/${requestId}/${verb}`, verb === 'reject' ? { reason: reason.trim() } : undefined);
      say(`Request #${requestId} is ${r.status}.`);
      render();
    } catch (e) {
      sayError(`${verb === 'approve' ? 'Approving' : 'Rejecting'} request #${requestId}`, e);
    }
  }

  // ---- Tokens ----------------------------------------------------------------------------

  async function pageTokens() {
    if (!can('admin')) return h('div', {}, h('h1', {}, 'Tokens'), h('p', { class: 'notice' }, 'Only an admin token lists and makes tokens.'));
    const tokens = (await api('GET', '/api/tokens')).tokens;
    const result = h('div', { id: 'token-result', 'aria-live': 'polite' });
    const role = h('select', { id: 'new-role' }, ['reader', 'uploader', 'reviewer', 'admin'].map((r) => h('option', { value: r }, r)));
    const label = h('input', { id: 'new-label', type: 'text', maxlength: 200, autocomplete: 'off' });
    const person = h('input', { id: 'new-person', type: 'text', maxlength: 200, autocomplete: 'off', placeholder: state.who.person || 'you' });
    const expiry = h('select', { id: 'new-expiry' },
      [['', 'never'], ['86400', '1 day'], ['604800', '7 days'], ['2592000', '30 days'], ['7776000', '90 days']].map(([v, t]) => h('option', { value: v }, t)));
    const form = h('form', { class: 'card', method: 'post', on: { submit: (e) => createToken(e, role.value, person.value, label.value, expiry.value, result) } },
      h('h2', {}, 'New token'),
      h('div', { class: 'row' },
        h('div', { class: 'field' }, h('label', { for: 'new-role' }, 'Role'), role),
        h('div', { class: 'field' }, h('label', { for: 'new-person' }, 'Person'), person),
        h('div', { class: 'field' }, h('label', { for: 'new-label' }, 'Label'), label),
        h('div', { class: 'field' }, h('label', { for: 'new-expiry' }, 'Expires after'), expiry),
        h('button', { type: 'submit', class: 'action primary', 'data-action': 'create-token' }, 'Create token')),
      result);
    const rows = tokens.map((t) => h('tr', { 'data-token': t.id, 'data-label': t.label },
      h('th', { scope: 'row' }, String(t.id)),
      h('td', {}, t.label || h('span', { class: 'muted' }, 'no label'), t.id === state.who.tokenId ? ' (this token)' : ''),
      h('td', {}, t.role),
      h('td', { class: 'hide-narrow' }, time(t.created)),
      h('td', { class: 'hide-narrow' }, time(t.lastUsed)),
      h('td', {}, t.expires ? time(t.expires) : 'never'),
      tokenState(t),
      h('td', { class: 'actions' }, t.revoked || expired(t) ? null : h('button', {
        type: 'button', class: 'action danger', 'data-action': 'revoke', 'aria-label': `Revoke token ${t.id} ${t.label}`,
        on: { click: () => revokeToken(t) },
      }, 'Revoke'))));
    return h('div', {}, h('h1', {}, 'Tokens'), form,
      table(['ID', 'Label', 'Role', 'Created', 'Last used', 'Expires', 'State', 'Actions'], rows, { id: 'tokens' }));
  }

  function expired(t) {
    return Boolean(t.expires) && new Date(t.expires).getTime() <= Date.now();
  }

  // A token's state in words: revoked (when), expired (when), or in use.
  function tokenState(t) {
    const word = t.revoked ? 'revoked' : expired(t) ? 'expired' : 'in use';
    return h('td', { 'data-revoked': t.revoked ? 'yes' : 'no', 'data-token-state': word },
      t.revoked ? [badge('revoked', 'rejected'), ' ', time(t.revoked)]
        : expired(t) ? [badge('expired', 'rejected'), ' ', time(t.expires), h('br'), h('span', { class: 'muted' }, 'refused by the server')]
          : 'in use');
  }

  async function createToken(event, role, person, label, expiry, result) {
    event.preventDefault();
    const body = { role, label: label.trim() };
    // Nobody named: the token is the signed-in person's (four-eyes counts one person's tokens as one).
    if (person.trim()) body.person = person.trim();
    if (expiry) body.expiresInSeconds = Number(expiry);
    try {
      const t = await api('POST', '/api/tokens', body);
      const secret = h('input', { id: 'new-token', class: 'secret', type: 'text', readonly: true, value: t.token, 'aria-describedby': 'new-token-help' });
      const copy = h('button', {
        type: 'button', id: 'copy-token', on: {
          click: async () => {
            secret.select();
            try {
              await navigator.clipboard.writeText(t.token);
              say(`Token ${t.id} copied.`);
            } catch (e) {
              say('The browser did not allow copying: the token is selected, copy it with the keyboard.', 'error');
            }
          },
        },
      }, 'Copy');
      result.replaceChildren(h('div', { class: 'notice' },
        h('p', { id: 'new-token-help' }, `Token ${t.id} (${t.role}${t.label ? `, “${t.label}”` : ''}) was created. `,
          h('strong', {}, 'It is shown once: copy it now.'), ' Only its label and role can be seen later.'),
        h('div', { class: 'row' }, h('label', { for: 'new-token' }, 'Token'), secret, copy)));
      secret.focus();
      secret.select();
      // The list below, without losing the secret shown above.
      const list = document.querySelector('#tokens tbody');
      if (list) {
        const fresh = await pageTokens();
        const freshList = fresh.querySelector('#tokens tbody');
        if (freshList) list.replaceWith(freshList);
      }
    } catch (e) {
      sayError('Creating the token', e);
    }
  }

  async function revokeToken(t) {
    if (!window.confirm(`Revoke token ${t.id}${t.label ? ` (“${t.label}”)` : ''}? Every server refuses it at once.`)) return;
    try {
      await api('DELETE', `/api/tokens/${t.id}`);
      say(`Token ${t.id}${t.label ? ` (“${t.label}”)` : ''} was revoked.`);
      render();
    } catch (e) {
      sayError(`Revoking token ${t.id}`, e);
    }
  }

  // ---- Keys ------------------------------------------------------------------------------

  function expiryCell(expires) {
    if (!expires) return h('td', {}, '—');
    const left = (new Date(expires).getTime() - Date.now()) / DAY;
    const days = `${left < 0 ? 'expired' : `${left.toFixed(1)} days left`}`;
    return h('td', { 'data-expiring': left < 7 ? 'yes' : 'no' }, time(expires), ' ',
      left < 7 ? badge(`warning: ${days}`, 'expiring') : h('span', { class: 'muted' }, `(${days})`));
  }

  async function pageKeys() {
    const parts = [h('h1', {}, 'Signing keys')];
    try {
      const k = await api('GET', '/api/keys');
      parts.push(h('section', { class: 'card' }, h('h2', {}, 'Current key'),
        h('p', {}, 'Key ', h('code', { class: 'digest' }, k.current.keyId), ` since ${time(k.current.since)}`),
        h('p', {}, 'Public key (base64): ', h('code', { class: 'digest' }, k.current.publicKey))));
      parts.push(h('section', { class: 'card' }, h('h2', {}, 'Rotation history'),
        k.history.length ? table(['Key', 'Since', 'Retired'], k.history.map((e) => h('tr', {},
          h('td', {}, h('code', { class: 'digest' }, e.keyId)), h('td', {}, time(e.since)), h('td', {}, e.retired ? time(e.retired) : 'in use'))))
          : h('p', { class: 'muted' }, 'The key was never rotated.')));
      parts.push(h('section', { class: 'card' }, h('h2', {}, 'Catalog expiry'),
        h('p', { class: 'muted' }, 'A catalog is re-signed when fewer than 7 days remain; a warning here means that did not happen.'),
        table(['App', 'Channel', 'Catalog version', 'Expires'], k.catalogs.map((c) => h('tr', {},
          h('td', {}, c.app), h('td', {}, c.channel), h('td', {}, String(c.version)), expiryCell(c.expires))))));
      return h('div', {}, parts);
    } catch (e) {
      if (!(e instanceof ApiError) || (e.status !== 404 && e.status !== 405)) throw e;
      parts.push(notAvailable('The key list (GET /api/keys)', e));
    }
    // What the channels say: each catalog's expiry and the key that signed it.
    const rows = [];
    for (const app of await apps()) {
      const channels = await channelStates(app.id);
      for (const c of CHANNELS) {
        const s = channels[c];
        if (s.catalogVersion === null) continue;
        rows.push(h('tr', {}, h('td', {}, app.id), h('td', {}, c), h('td', {}, String(s.catalogVersion)),
          h('td', {}, h('code', {}, `${s.signingKey.slice(0, 16)}…`)), expiryCell(s.expires)));
      }
    }
    parts.push(h('section', { class: 'card' }, h('h2', {}, 'Catalog expiry (from the channels)'),
      rows.length ? table(['App', 'Channel', 'Catalog version', 'Signed by', 'Expires'], rows) : h('p', { class: 'muted' }, 'No catalog published yet.')));
    return h('div', {}, parts);
  }

  // ---- Activity --------------------------------------------------------------------------

  const ACTIONS = ['app.create', 'app.update', 'pack.create', 'version.create', 'version.uploaded', 'version.processed',
    'version.failed', 'version.delete', 'version.abandoned', 'release.request', 'release.approve', 'release.reject',
    'rollout.set', 'rollout.phase', 'rollout.step', 'rollout.halt', 'rollback', 'withdraw', 'token.create', 'token.revoke',
    'token.rotate', 'key.rotate', 'catalog.resign', 'storage.adopt'];

  async function pageActivity(id, app, action) {
    const list = await apps();
    const appFilter = app && app !== 'all' ? app : '';
    const actionFilter = action && action !== 'all' ? action : '';
    const change = () => go(`#/activity/${enc(appSelect.value || 'all')}/${enc(actionSelect.value || 'all')}`);
    const appSelect = h('select', { id: 'activity-app', on: { change } },
      h('option', { value: '' }, 'every app'), list.map((a) => h('option', { value: a.id, selected: a.id === appFilter }, a.id)));
    const actionSelect = h('select', { id: 'activity-action', on: { change } },
      h('option', { value: '' }, 'every action'), ACTIONS.map((a) => h('option', { value: a, selected: a === actionFilter }, a)));
    const filters = h('div', { class: 'row' },
      h('div', { class: 'field' }, h('label', { for: 'activity-app' }, 'App'), appSelect),
      h('div', { class: 'field' }, h('label', { for: 'activity-action' }, 'Action'), actionSelect));
    const body = h('tbody', {});
    const more = h('p', {});
    const load = async (before) => {
      const q = new URLSearchParams({ limit: '100' });
      if (appFilter) q.set('app', appFilter);
      if (actionFilter) q.set('action', actionFilter);
      if (before !== undefined) q.set('before', String(before));
      const page = await api('GET', `/api/audit?${q}`);
      append(body, page.entries.map(auditRow));
      more.replaceChildren(page.next === null || page.next === undefined ? h('span', { class: 'muted' }, body.children.length ? 'No older entries.' : 'No entry.')
        : h('button', { type: 'button', on: { click: () => load(page.next).catch((e) => sayError('Loading older entries', e)) } }, 'Older entries'));
    };
    try {
      await load();
    } catch (e) {
      if (!(e instanceof ApiError) || (e.status !== 404 && e.status !== 405)) throw e;
      return h('div', {}, h('h1', {}, 'Activity'), notAvailable('The audit trail (GET /api/audit)', e));
    }
    return h('div', {}, h('h1', {}, 'Activity'), filters,
      h('div', { class: 'table-wrap' }, h('table', { id: 'audit' },
        h('thead', {}, h('tr', {}, ['Time', 'Who', 'App', 'What', 'Action', 'Details'].map((t) => h('th', { scope: 'col' }, t)))), body)),
      more);
  }

  function auditRow(e) {
    const what = [e.pack, e.version === null || e.version === undefined ? null : `version ${e.version}`].filter(Boolean).join(' ');
    const details = Object.entries(e.details || {}).map(([k, v]) => `${k}: ${v}`).join(', ');
    return h('tr', { 'data-audit': e.id },
      h('td', {}, time(e.time)),
      h('td', {}, e.actor ? `“${e.actor.label}” (${e.actor.role})` : '—'),
      h('td', {}, e.app || '—'),
      h('td', {}, what || '—'),
      h('td', {}, h('code', {}, e.action)),
      h('td', {}, details || '—'));
  }

  // ---- Downloads -------------------------------------------------------------------------

  async function pageDownloads(id, ...args) {
    const { app, picker, unknown } = await chooseApp(args, 'downloads');
    if (unknown) return noSuchApp('Downloads', unknown);
    if (!app) return h('div', {}, h('h1', {}, 'Downloads'), noApps());
    const days = ['7', '30', '90'].includes(args[1]) ? args[1] : '30';
    const daySelect = h('div', { class: 'field' }, h('label', { for: 'download-days' }, 'Days'),
      h('select', { id: 'download-days', on: { change: (e) => go(`#/downloads/${enc(app)}/${e.target.value}`) } },
        ['7', '30', '90'].map((d) => h('option', { value: d, selected: d === days }, `last ${d} days`))));
    let data;
    try {
      data = await api('GET', `/api/apps/${enc(app)}/downloads?days=${days}`);
    } catch (e) {
      if (!(e instanceof ApiError) || (e.status !== 404 && e.status !== 405)) throw e;
      return h('div', {}, h('h1', {}, `Downloads of ${app}`), h('div', { class: 'row' }, picker), notAvailable('Download counts (GET /api/apps/APP/downloads)', e));
    }
    const dates = [];
    for (let t = Date.parse(`${data.from}T00:00:00Z`); t <= Date.parse(`${data.to}T00:00:00Z`); t += DAY) dates.push(new Date(t).toISOString().slice(0, 10));
    const perDay = Object.fromEntries(dates.map((d) => [d, { requests: 0, bytes: 0 }]));
    const perVersion = {};
    for (const r of data.rows) {
      if (perDay[r.date]) {
        perDay[r.date].requests += r.requests;
        perDay[r.date].bytes += r.bytes;
      }
      const key = r.pack === null ? `catalog and keys (${r.kind})` : `${r.pack} version ${r.version} (${r.kind})`;
      const sum = perVersion[key] || (perVersion[key] = { requests: 0, bytes: 0 });
      sum.requests += r.requests;
      sum.bytes += r.bytes;
    }
    const channels = await channelStates(app);
    const staged = channels.production.packs.filter((p) => p.candidate && p.live);
    const packRequests = (pack, version) => data.rows.filter((r) => r.pack === pack && r.version === version && (r.kind === 'pack' || r.kind === 'applePack'))
      .reduce((n, r) => n + r.requests, 0);
    // What devices reported (the privacy page of docs/): devices, not requests. A figure below the
    // threshold comes as null and is shown as such.
    let adoption = null;
    let adoptionError = null;
    try {
      adoption = await api('GET', `/api/apps/${enc(app)}/adoption?days=${days}`);
    } catch (e) {
      if (!(e instanceof ApiError) || (e.status !== 404 && e.status !== 405)) throw e;
      adoptionError = e;
    }
    const few = adoption ? `< ${adoption.threshold}` : '';
    const figure = (n) => (n === null || n === undefined ? few : String(n));
    const reported = adoption ? adoption.rows : [];
    const devicesPerDay = dates.map((d) => reported.filter((r) => r.date === d && r.pack === null).reduce((n, r) => n + (r.devices || 0), 0));
    const lastDay = reported.length ? reported[reported.length - 1].date : null;
    const latest = reported.filter((r) => r.date === lastDay && r.pack !== null);
    const devicesOn = (pack, version) => {
      const row = latest.find((r) => r.channel === 'production' && r.pack === pack && r.version === version);
      return row ? row.devices : 0;
    };
    const failureRate = (r) => (r.started === null || r.failed === null ? '—' : percent((100 * r.failed) / Math.max(1, r.started, (r.finished || 0) + r.failed)));
    const devicesSection = !adoption
      ? [h('h2', {}, 'Devices'), notAvailable('Device reports (GET /api/apps/APP/adoption)', adoptionError)]
      : [h('h2', {}, 'Devices reporting per day'),
        chart(dates, devicesPerDay, (n) => `${n} devices`, 'bar'),
        h('p', { 'data-devices-reported': lastDay ? figure(reported.find((r) => r.date === lastDay && r.pack === null)?.devices) : '0' },
          lastDay ? `${figure(reported.find((r) => r.date === lastDay && r.pack === null)?.devices)} devices reported on ${lastDay}.` : 'No device reported yet.'),
        h('p', { class: 'muted' }, `Devices report what they hold once a day and when it changes, without an identifier; figures below ${adoption.threshold} are shown as “${few}”.`),
        ...adoptionCharts(dates, reported, channels.production.packs),
        latest.length
          ? table(['Release', 'Devices', 'Installs started', 'Finished', 'Failed', 'Failure rate'], latest.map((r) =>
            h('tr', { 'data-adoption': `${r.channel}/${r.pack}/${r.version}` }, h('td', {}, `${r.pack} version ${r.version} (${r.channel}, ${r.date})`),
              h('td', { class: 'num', 'data-devices': figure(r.devices) }, figure(r.devices)),
              h('td', { class: 'num' }, figure(r.started)), h('td', { class: 'num' }, figure(r.finished)),
              h('td', { class: 'num' }, figure(r.failed)), h('td', { class: 'num' }, failureRate(r)))))
          : h('p', { class: 'muted' }, 'No device reported in these days.')];
    return h('div', {}, h('h1', {}, `Downloads of ${app}`),
      h('div', { class: 'row' }, picker, daySelect),
      h('p', { class: 'muted' }, `From ${data.from} to ${data.to} (UTC days), as counted by the server from its own responses.`),
      h('h2', {}, 'Requests per day'), chart(dates, dates.map((d) => perDay[d].requests), (n) => `${n} requests`, 'bar'),
      h('h2', {}, 'Bytes sent per day'), chart(dates, dates.map((d) => perDay[d].bytes), bytes, 'bar2'),
      h('h2', {}, 'By pack and version'),
      Object.keys(perVersion).length
        ? table(['What', 'Requests', 'Bytes'], Object.entries(perVersion).sort().map(([k, v]) =>
          h('tr', {}, h('td', {}, k), h('td', { class: 'num' }, String(v.requests)), h('td', { class: 'num', title: `${v.bytes} bytes` }, bytes(v.bytes)))))
        : h('p', { class: 'muted' }, 'Nothing downloaded in these days.'),
      ...devicesSection,
      h('h2', {}, 'Candidate and live on production'),
      staged.length
        ? table(['Pack', 'Live: pack requests', 'Candidate: pack requests', 'Live: devices', 'Candidate: devices', 'Candidate share of devices'], staged.map((p) => {
          const live = packRequests(p.pack, p.live.version);
          const cand = packRequests(p.pack, p.candidate.version);
          const liveDevices = devicesOn(p.pack, p.live.version);
          const candDevices = devicesOn(p.pack, p.candidate.version);
          return h('tr', {}, h('td', {}, `${p.pack} (live ${p.live.version}, candidate ${p.candidate.version} at ${percent(p.candidate.rolloutPercent)})`),
            h('td', { class: 'num' }, String(live)), h('td', { class: 'num' }, String(cand)),
            h('td', { class: 'num' }, figure(liveDevices)), h('td', { class: 'num' }, figure(candDevices)),
            h('td', { class: 'num', 'data-candidate-share': '' }, liveDevices && candDevices ? percent((100 * candDevices) / (liveDevices + candDevices)) : '—'));
        }))
        : h('p', { class: 'muted' }, 'No staged rollout on production now.'));
  }

  // Per production pack, the share of the devices that reported each day that held each version:
  // one line per version (a day whose figure is below the threshold leaves a gap), the candidate's
  // rollout share named in the heading.
  function adoptionCharts(dates, rows, packs) {
    const production = rows.filter((r) => r.channel === 'production');
    const totals = Object.fromEntries(dates.map((d) => [d, (production.find((r) => r.date === d && r.pack === null) || {}).devices || 0]));
    const names = [...new Set(production.filter((r) => r.pack !== null).map((r) => r.pack))].sort();
    return names.flatMap((pack) => {
      const versions = [...new Set(production.filter((r) => r.pack === pack && r.devices !== null).map((r) => r.version))].sort((a, b) => a - b);
      if (!versions.length) return [];
      const series = versions.map((version) => ({
        version,
        values: dates.map((d) => {
          const row = production.find((r) => r.date === d && r.pack === pack && r.version === version);
          return row && row.devices !== null && totals[d] ? (100 * row.devices) / totals[d] : null;
        }),
      }));
      const state = packs.find((p) => p.pack === pack);
      const rollout = state && state.candidate ? `; version ${state.candidate.version} is offered to ${percent(state.candidate.rolloutPercent)} of devices` : '';
      return [h('h3', {}, `${pack}: share of reporting devices per version${rollout}`), lineChart(dates, series, pack)];
    });
  }

  // Lines of percentages per day (0–100 %), drawn as SVG as wide as the page's column; each line
  // carries its version and its last share (data-last-share), each point a title with its figure.
  function lineChart(dates, series, pack) {
    const main = document.getElementById('main');
    const style = main ? getComputedStyle(main) : null;
    const column = main ? main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 2 : 800;
    const width = Math.round(Math.max(280, Math.min(800, column || 800)));
    const height = 220;
    const left = 44;
    const right = 10;
    const bottom = 30;
    const top = 10;
    const plot = width - left - right;
    const step = plot / Math.max(1, dates.length);
    const x = (i) => left + i * step + step / 2;
    const y = (v) => height - bottom - ((height - bottom - top) * v) / 100;
    const g = svg('svg', { class: 'chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'data-adoption-pack': pack,
      'aria-label': `share of reporting devices per version of ${pack}` });
    g.append(svg('line', { class: 'axis', x1: left, y1: height - bottom, x2: width - right, y2: height - bottom }));
    g.append(svg('line', { class: 'axis', x1: left, y1: top, x2: left, y2: height - bottom }));
    g.append(svg('text', { x: left - 6, y: top + 10, 'text-anchor': 'end' }, '100 %'));
    g.append(svg('text', { x: left - 6, y: height - bottom, 'text-anchor': 'end' }, '0'));
    series.forEach((s, n) => {
      let d = '';
      let pen = 'M';
      let last = null;
      s.values.forEach((v) => {
        if (v !== null) last = v;
      });
      s.values.forEach((v, i) => {
        if (v === null) { pen = 'M'; return; }
        d += `${pen}${x(i).toFixed(1)},${y(v).toFixed(1)} `;
        pen = 'L';
      });
      const line = svg('g', { 'data-version': String(s.version), 'data-last-share': last === null ? '' : last.toFixed(1) });
      line.append(svg('path', { class: n % 2 ? 'line2' : 'line', d: d.trim() }));
      s.values.forEach((v, i) => {
        if (v === null) return;
        const dot = svg('circle', { class: n % 2 ? 'line2' : 'line', cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: 3 });
        dot.append(svg('title', {}, `${dates[i]}: version ${s.version} on ${percent(v)} of reporting devices`));
        line.append(dot);
      });
      g.append(line);
    });
    return g;
  }

  // A bar chart of one value per day, drawn as SVG (no library); each bar has a title for its figure.
  // The drawing is as wide as the page's column (800 at most), so its 11 px labels are drawn at
  // their size on a phone too; the left margin fits the longest figure, and the days are labelled
  // only as often as their labels fit side by side.
  function chart(dates, values, format, barClass) {
    const main = document.getElementById('main');
    const style = main ? getComputedStyle(main) : null;
    const column = main ? main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 2 : 800;
    const width = Math.round(Math.max(280, Math.min(800, column || 800)));
    const height = 220;
    const charWidth = 7; // at most, for the 11 px labels
    const max = Math.max(1, ...values);
    const topLabel = format(max);
    const left = Math.max(24, topLabel.length * charWidth + 10);
    const right = 10;
    const bottom = 30;
    const top = 10;
    const plot = width - left - right;
    const step = plot / Math.max(1, values.length);
    const g = svg('svg', { class: 'chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `${format(values.reduce((a, b) => a + b, 0))} in all, at most ${format(max)} a day` });
    g.append(svg('line', { class: 'axis', x1: left, y1: height - bottom, x2: width - right, y2: height - bottom }));
    g.append(svg('line', { class: 'axis', x1: left, y1: top, x2: left, y2: height - bottom }));
    g.append(svg('text', { x: left - 6, y: top + 10, 'text-anchor': 'end' }, topLabel));
    g.append(svg('text', { x: left - 6, y: height - bottom, 'text-anchor': 'end' }, '0'));
    values.forEach((v, i) => {
      const barHeight = ((height - bottom - top) * v) / max;
      const bar = svg('rect', { class: barClass, x: (left + i * step + step * 0.1).toFixed(1), y: (height - bottom - barHeight).toFixed(1), width: Math.max(1, step * 0.8).toFixed(1), height: barHeight.toFixed(1) });
      bar.append(svg('title', {}, `${dates[i]}: ${format(v)}`));
      g.append(bar);
    });
    // A day's label (MM-DD) is 5 characters; one every `labelEvery` days, each within the plot.
    const labelWidth = 5 * charWidth + 8;
    const labelEvery = Math.max(1, Math.ceil(values.length / Math.max(1, Math.floor(plot / labelWidth))));
    let lastX = -Infinity;
    dates.forEach((d, i) => {
      if (i % labelEvery !== 0) return;
      const x = Math.min(width - right - labelWidth / 2, Math.max(left + labelWidth / 2, left + i * step + step / 2));
      if (x - lastX < labelWidth) return; // pushed in from the edge onto the one before it
      lastX = x;
      g.append(svg('text', { x: x.toFixed(1), y: height - 10, 'text-anchor': 'middle' }, d.slice(5)));
    });
    return g;
  }

  // ---- start -----------------------------------------------------------------------------

  window.addEventListener('hashchange', () => {
    say('');
    render().then(() => document.getElementById('main').focus({ preventScroll: true }));
  });
  document.addEventListener('DOMContentLoaded', () => {
    document.getElementById('sign-out').addEventListener('click', signOut);
    render();
  });
})();
