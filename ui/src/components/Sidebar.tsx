// The sidebar: page links, the projects (natural order, filterable, with their live session
// counts) and the buttons that add projects. Below 800 px it is a drawer the top bar opens.
import { useState } from 'react';
import { NavLink } from 'react-router-dom';
import { liveCounts, type Overview } from '../lib/overview';
import { matchesQuery } from '../lib/naturalSort';
import { useAuth } from '../store/auth';
import { NAV } from './nav';

const COLLAPSED_KEY = 'conduit-projects-collapsed';

function remembered(key: string): boolean {
  try {
    return localStorage.getItem(key) === '1';
  } catch {
    return false;
  }
}

function remember(key: string, on: boolean): void {
  try {
    if (on) localStorage.setItem(key, '1');
    else localStorage.removeItem(key);
  } catch {
    // Not kept: it lasts for the page.
  }
}

export function Sidebar(props: { overview: Overview; onCreate: () => void; onImport: () => void; onClose: () => void }) {
  const { overview } = props;
  const [filter, setFilter] = useState('');
  const [collapsed, setCollapsed] = useState(() => remembered(COLLAPSED_KEY));
  const isUser = useAuth((s) => Boolean(s.me?.user));
  const counts = liveCounts(overview.live);
  const shown = overview.projects.filter((p) => matchesQuery(p.name, filter));
  const toggle = () => {
    remember(COLLAPSED_KEY, !collapsed);
    setCollapsed(!collapsed);
  };

  return (
    <aside className="sidebar" id="sidebar" aria-label="Navigation">
      <div className="sidebar-head">
        <NavLink to="/" className="brand">
          <span className="brand-mark" />
          Conduit
        </NavLink>
        <button className="icon-button sidebar-close" aria-label="Close the menu" onClick={props.onClose}>
          ×
        </button>
      </div>
      <nav>
        {NAV.filter((n) => isUser || !n.userOnly).map((n) => (
          <NavLink key={n.to} to={n.to} end={n.end} className="nav-item">
            {n.label}
          </NavLink>
        ))}
      </nav>
      <div className="sidebar-section">
        <button className="sidebar-title" onClick={toggle} aria-expanded={!collapsed} aria-controls="project-list">
          <span className="chevron" aria-hidden="true">
            {collapsed ? '▸' : '▾'}
          </span>
          Projects
          {overview.projects.length > 0 && <span className="sidebar-count">{overview.projects.length}</span>}
        </button>
        {!collapsed && (
          <>
            {overview.projects.length > 0 && (
              <input
                className="sidebar-filter"
                type="search"
                value={filter}
                onChange={(e) => setFilter(e.target.value)}
                placeholder="Filter projects"
                aria-label="Filter projects"
              />
            )}
            {overview.error && <p className="sidebar-note">Projects could not be loaded: {overview.error}</p>}
            {!overview.loading && overview.projects.length === 0 && !overview.error && (
              <p className="sidebar-note">No projects yet. Create one, or import a folder that already holds code.</p>
            )}
            {overview.projects.length > 0 && shown.length === 0 && <p className="sidebar-note">No project matches “{filter}”.</p>}
          </>
        )}
        {/* Always rendered (hidden when collapsed), so its test id and links stay findable. */}
        <ul className="project-list" id="project-list" data-testid="project-list" hidden={collapsed}>
          {shown.map((p) => {
            const live = counts.get(p.id) ?? 0;
            return (
              <li key={p.id}>
                <NavLink to={`/projects/${p.id}`} className="nav-item" title={p.name}>
                  <span className="project-name">{p.name}</span>
                  {live > 0 && (
                    <span className="pill" title={`${live} live session${live === 1 ? '' : 's'}`}>
                      {live}
                    </span>
                  )}
                </NavLink>
              </li>
            );
          })}
        </ul>
      </div>
      <div className="sidebar-buttons">
        <button className="button primary" onClick={props.onCreate}>
          New project
        </button>
        <button className="button ghost" onClick={props.onImport}>
          Import folder
        </button>
      </div>
    </aside>
  );
}
