// The shell around every page: sidebar (a drawer on narrow screens), top bar, the Ctrl+K
// switcher, and the project dialogs.
import { useQuery } from '@tanstack/react-query';
import { useCallback, useEffect, useState } from 'react';
import { Outlet, useLocation, useNavigate } from 'react-router-dom';
import type { Session } from '../api/client';
import { useOverview } from '../lib/overview';
import { usageQuery } from '../query/queries';
import { useNotifier } from './Notifications';
import { CreateProjectDialog, ImportProjectDialog } from './ProjectDialogs';
import { Sidebar } from './Sidebar';
import { Switcher, useSwitcherShortcut } from './Switcher';
import { TopBar } from './TopBar';

const NARROW = '(max-width: 800px)';
const HIDDEN_KEY = 'conduit-sidebar-hidden';

function narrow(): boolean {
  return typeof window.matchMedia === 'function' && window.matchMedia(NARROW).matches;
}

function readHidden(): boolean {
  try {
    return localStorage.getItem(HIDDEN_KEY) === '1';
  } catch {
    return false;
  }
}

export function Layout() {
  const overview = useOverview();
  // From the cost ledger, not the sessions' totals: scheduled agents' runs cost money too.
  const usage = useQuery(usageQuery());
  const notifier = useNotifier();
  const navigate = useNavigate();
  const location = useLocation();
  const [dialog, setDialog] = useState<'create' | 'import' | null>(null);
  const [switcher, setSwitcher] = useState(false);
  // Narrow screens: the sidebar is a drawer, closed until asked for. Wide ones: shown unless hidden.
  const [drawerOpen, setDrawerOpen] = useState(false);
  const [sidebarHidden, setSidebarHidden] = useState(readHidden);

  const openSwitcher = useCallback(() => setSwitcher(true), []);
  useSwitcherShortcut(openSwitcher);
  // A link followed in the drawer closes it.
  useEffect(() => setDrawerOpen(false), [location.pathname]);
  useEffect(() => {
    if (!drawerOpen) return;
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && setDrawerOpen(false);
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [drawerOpen]);

  const toggleMenu = () => {
    if (narrow()) {
      setDrawerOpen(!drawerOpen);
      return;
    }
    try {
      if (sidebarHidden) localStorage.removeItem(HIDDEN_KEY);
      else localStorage.setItem(HIDDEN_KEY, '1');
    } catch {
      // Not kept: it lasts for the page.
    }
    setSidebarHidden(!sidebarHidden);
  };
  const opened = (id: string) => {
    setDialog(null);
    navigate(`/projects/${id}`);
  };
  const totalCost = usage.data?.total.cost_usd ?? null;
  const classes = ['shell', drawerOpen ? 'drawer-open' : '', sidebarHidden ? 'sidebar-hidden' : ''].filter(Boolean).join(' ');

  return (
    <div className={classes}>
      <Sidebar
        overview={overview}
        onCreate={() => setDialog('create')}
        onImport={() => setDialog('import')}
        onClose={() => setDrawerOpen(false)}
      />
      {drawerOpen && <div className="drawer-backdrop" onClick={() => setDrawerOpen(false)} />}
      <div className="main">
        <TopBar
          menuOpen={narrow() ? drawerOpen : !sidebarHidden}
          onMenu={toggleMenu}
          onSwitcher={openSwitcher}
          totalCost={totalCost}
          notifier={notifier}
        />
        <main className="content">
          <Outlet />
        </main>
      </div>
      {dialog === 'create' && <CreateProjectDialog onClose={() => setDialog(null)} onCreated={opened} />}
      {dialog === 'import' && <ImportProjectDialog onClose={() => setDialog(null)} onCreated={opened} />}
      {switcher && (
        <Switcher projects={overview.projects} sessions={mergeSessions(overview.sessions, overview.live)} onClose={() => setSwitcher(false)} />
      )}
    </div>
  );
}

/** Every known session once (the live list may hold one a project list has not loaded yet). */
function mergeSessions(all: Session[], live: Session[]): Session[] {
  const seen = new Set(all.map((s) => s.id));
  return [...all, ...live.filter((s) => !seen.has(s.id))];
}
