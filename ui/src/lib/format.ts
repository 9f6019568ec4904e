// How numbers and times read on screen.

export function usd(value: number | null | undefined): string {
  const v = value ?? 0;
  if (v === 0) return '$0.00';
  // Fake and cheap turns cost fractions of a cent: show two significant digits, never "$0.00".
  if (v < 0.01) return `$${Number(v.toPrecision(2))}`;
  return `$${v.toFixed(2)}`;
}

export function count(value: number | null | undefined): string {
  const v = value ?? 0;
  if (v >= 1_000_000) return `${(v / 1_000_000).toFixed(1)}M`;
  if (v >= 10_000) return `${(v / 1000).toFixed(1)}k`;
  return v.toLocaleString('en-US');
}

/** Bytes as people read them: "512 B", "48 KiB", "1.5 MiB", "2.0 GiB" (binary units, as the
 * kernel counts memory); "—" when unknown. */
export function bytes(value: number | null | undefined): string {
  if (value == null) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = value;
  let unit = 0;
  while (v >= 1024 && unit < units.length - 1) {
    v /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${v} B` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[unit]}`;
}

/** "just now", "5 min ago", "3 h ago", "2 days ago", from an RFC 3339 time. */
export function ago(iso: string | null | undefined, now: number = Date.now()): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 10) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  const d = Math.floor(s / 86_400);
  return d === 1 ? 'yesterday' : `${d} days ago`;
}

export function duration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${seconds % 60}s`;
  const h = Math.floor(seconds / 3600);
  return h < 48 ? `${h}h ${Math.floor((seconds % 3600) / 60)}m` : `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** "resumes in 1m 12s", or "resuming…" once the time has come (the service adds a little jitter). */
export function resumesIn(iso: string | null | undefined, now: number = Date.now()): string {
  if (!iso) return 'resumes when the limit resets';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return `resumes at ${iso}`;
  // Rounded up: "resumes in 0s" would read as if it had already happened.
  const s = Math.ceil((t - now) / 1000);
  return s > 0 ? `resumes in ${duration(s)}` : 'resuming…';
}

// `waiting_for_limit` and `paused` keep their CLI running (turns wait in its queue), so they
// count as live: the session stays in the live list and can still be written to.
export const LIVE_STATUSES = ['starting', 'idle', 'active', 'compacting', 'waiting_for_limit', 'paused'];

/** A status as words: `waiting_for_limit` reads "waiting for limit". */
export function statusLabel(status: string): string {
  return status.replace(/_/g, ' ');
}

export function isLive(status: string): boolean {
  return LIVE_STATUSES.includes(status);
}
