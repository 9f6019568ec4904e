import { useState } from 'react';
import { NavLink, Outlet, useNavigate } from 'react-router-dom';
import { useLive } from '../store/live';
import { usd } from '../lib/format';
import { useOverview } from '../lib/overview';
import { NAV } from './nav';
import { CreateProjectDialog, ImportProjectDialog } from './ProjectDialogs';

export function Layout() {
  const overview = useOverview();
  const [dialog, setDialog] = useState<'create' | 'import' | null>(null);
  const navigate = useNavigate();
  const projects = overview.data?.projects ?? [];
  const totalCost = (overview.data?.sessions ?? []).reduce((sum, s) => sum + s.total_cost_usd, 0);
  const opened = (id: string) => {
    setDialog(null);
    useLive.getState().bumpConfig();
    navigate(`/projects/${id}`);
  };

  return (
    <div className="shell">
      <aside className="sidebar">
        <NavLink to="/" className="brand">
          <span className="brand-mark" />
          Conduit
        </NavLink>
        <nav>
          {NAV.map((n) => (
            <NavLink key={n.to} to={n.to} end={n.end} className="nav-item">
              {n.label}
            </NavLink>
          ))}
        </nav>
        <div className="sidebar-section">
          <div className="sidebar-title">Projects</div>
          {overview.error && <p className="sidebar-note">Projects could not be loaded: {overview.error}</p>}
          {!overview.loading && projects.length === 0 && !overview.error && (
            <p className="sidebar-note">No projects yet. Create one, or import a folder that already holds code.</p>
          )}
          <ul className="project-list" data-testid="project-list">
            {projects.map((p) => {
              const live = (overview.data?.sessions ?? []).filter(
                (s) => s.project_id === p.id && ['starting', 'idle', 'active', 'compacting'].includes(s.status),
              ).length;
              return (
                <li key={p.id}>
                  <NavLink to={`/projects/${p.id}`} className="nav-item">
                    <span className="project-name">{p.name}</span>
                    {live > 0 && <span className="pill">{live}</span>}
                  </NavLink>
                </li>
              );
            })}
          </ul>
        </div>
        <div className="sidebar-buttons">
          <button className="button primary" onClick={() => setDialog('create')}>
            New project
          </button>
          <button className="button ghost" onClick={() => setDialog('import')}>
            Import folder
          </button>
        </div>
      </aside>
      <div className="main">
        <header className="topbar">
          <ConnectionStatus />
          <div className="topbar-cost" data-testid="total-cost">
            Total cost <strong>{usd(totalCost)}</strong>
          </div>
        </header>
        <main className="content">
          <Outlet />
        </main>
      </div>
      {dialog === 'create' && <CreateProjectDialog onClose={() => setDialog(null)} onCreated={opened} />}
      {dialog === 'import' && <ImportProjectDialog onClose={() => setDialog(null)} onCreated={opened} />}
    </div>
  );
}

function ConnectionStatus() {
  const connection = useLive((s) => s.connection);
  const text = {
    connecting: 'Connecting to live updates…',
    live: 'Live',
    reconnecting: 'Connection lost, reconnecting…',
  }[connection];
  return (
    <div className={`connection connection-${connection}`} data-testid="connection" title="The live event stream">
      <span className="dot" />
      {text}
    </div>
  );
}
