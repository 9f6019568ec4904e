// Ctrl+K / Cmd+K: jump to a project or a session by typing part of its name.
import { useEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { useNavigate } from 'react-router-dom';
import type { Project, Session } from '../api/client';
import { statusLabel } from '../lib/format';
import { matchesQuery, sortByName } from '../lib/naturalSort';

export interface SwitcherItem {
  key: string;
  name: string;
  detail: string;
  path: string;
}

const MAX_SHOWN = 50;

/** Projects, then sessions, each in natural order, whose names match `query`. */
export function switcherItems(projects: Project[], sessions: Session[], query: string): SwitcherItem[] {
  const projectName = new Map(projects.map((p) => [p.id, p.name]));
  const found: SwitcherItem[] = [
    ...sortByName(projects.filter((p) => matchesQuery(p.name, query))).map((p) => ({
      key: `p:${p.id}`,
      name: p.name,
      detail: 'project',
      path: `/projects/${p.id}`,
    })),
    ...sortByName(sessions.filter((s) => matchesQuery(s.name, query))).map((s) => ({
      key: `s:${s.id}`,
      name: s.name,
      detail: `${projectName.get(s.project_id) ?? 'session'} · ${statusLabel(s.status)}`,
      path: `/sessions/${s.id}`,
    })),
  ];
  return found.slice(0, MAX_SHOWN);
}

/** Opens on Ctrl+K or Cmd+K anywhere on the page. */
export function useSwitcherShortcut(open: () => void): void {
  useEffect(() => {
    const onKey = (e: globalThis.KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === 'k') {
        e.preventDefault();
        open();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [open]);
}

export function Switcher(props: { projects: Project[]; sessions: Session[]; onClose: () => void }) {
  const navigate = useNavigate();
  const [query, setQuery] = useState('');
  const [active, setActive] = useState(0);
  const list = useRef<HTMLUListElement>(null);
  const items = useMemo(() => switcherItems(props.projects, props.sessions, query), [props.projects, props.sessions, query]);
  const current = Math.min(active, Math.max(0, items.length - 1));

  useEffect(() => {
    list.current?.querySelector('[aria-selected="true"]')?.scrollIntoView?.({ block: 'nearest' });
  }, [current]);

  const go = (item: SwitcherItem | undefined) => {
    if (!item) return;
    props.onClose();
    navigate(item.path);
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (items.length === 0) return;
      const step = e.key === 'ArrowDown' ? 1 : -1;
      setActive((current + step + items.length) % items.length);
    } else if (e.key === 'Enter') {
      e.preventDefault();
      go(items[current]);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      props.onClose();
    }
  };

  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && props.onClose()}>
      <div className="modal switcher" role="dialog" aria-label="Go to a project or session" data-testid="switcher">
        <input
          autoFocus
          className="switcher-input"
          value={query}
          onChange={(e) => {
            setQuery(e.target.value);
            setActive(0);
          }}
          onKeyDown={onKey}
          placeholder="Go to a project or session…"
          aria-label="Search projects and sessions"
          role="combobox"
          aria-expanded="true"
          aria-controls="switcher-results"
          aria-activedescendant={items[current] ? `switcher-${items[current].key}` : undefined}
        />
        <ul className="switcher-results" id="switcher-results" role="listbox" ref={list}>
          {items.map((item, i) => (
            <li
              key={item.key}
              id={`switcher-${item.key}`}
              role="option"
              aria-selected={i === current}
              className={i === current ? 'switcher-item active' : 'switcher-item'}
              onMouseMove={() => setActive(i)}
              onClick={() => go(item)}
            >
              <span className="switcher-name">{item.name}</span>
              <span className="muted small">{item.detail}</span>
            </li>
          ))}
          {items.length === 0 && <li className="switcher-empty muted">Nothing is called that.</li>}
        </ul>
        <div className="switcher-help muted small">↑↓ to choose · Enter to open · Esc to close</div>
      </div>
    </div>
  );
}
