// The bar above every page: the menu button, the live indicator, the switcher, the total cost,
// notifications, the theme, and signing out (for a sign-in cookie only).
import { useState } from 'react';
import { hasCookieSession } from '../api/auth';
import { usd } from '../lib/format';
import type { Notifier } from '../lib/notify';
import { nextTheme, useTheme, type ThemeChoice } from '../lib/theme';
import { signOut, useAuth } from '../store/auth';
import { useLive } from '../store/live';
import { NotificationsToggle } from './Notifications';

const THEME_LABEL: Record<ThemeChoice, string> = { system: 'System theme', light: 'Light theme', dark: 'Dark theme' };
const THEME_ICON: Record<ThemeChoice, string> = { system: '◐', light: '☀', dark: '☾' };

export function TopBar(props: {
  menuOpen: boolean;
  onMenu: () => void;
  onSwitcher: () => void;
  totalCost: number | null;
  notifier: Notifier;
}) {
  const [theme, setTheme] = useTheme();
  const mac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform);
  return (
    <header className="topbar">
      <button
        className="icon-button menu-button"
        aria-label="Menu"
        aria-controls="sidebar"
        aria-expanded={props.menuOpen}
        onClick={props.onMenu}
        data-testid="menu-toggle"
      >
        ☰
      </button>
      <ConnectionStatus />
      <div className="topbar-actions">
        <button className="button small ghost switcher-button" onClick={props.onSwitcher} title="Go to a project or session">
          Go to… <kbd>{mac ? '⌘' : 'Ctrl'}K</kbd>
        </button>
        <NotificationsToggle notifier={props.notifier} />
        <button
          className="icon-button theme-button"
          onClick={() => setTheme(nextTheme(theme))}
          aria-label={`${THEME_LABEL[theme]} (click for ${THEME_LABEL[nextTheme(theme)].toLowerCase()})`}
          title={THEME_LABEL[theme]}
          data-testid="theme-toggle"
        >
          {THEME_ICON[theme]}
        </button>
        <div className="topbar-cost" data-testid="total-cost">
          <span className="topbar-cost-label">Total cost</span>
          <strong>{props.totalCost === null ? '…' : usd(props.totalCost)}</strong>
        </div>
        <SignOut />
      </div>
    </header>
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
    <div className={`connection connection-${connection}`} data-testid="connection" title="The live event stream" role="status">
      <span className="dot" />
      <span className="connection-text">{text}</span>
    </div>
  );
}

/**
 * Who is signed in, and the button that ends it. Only a sign-in cookie can be signed out of:
 * a token, HTTP Basic or open mode (no credential at all) gets nothing here.
 */
function SignOut() {
  const me = useAuth((s) => s.me);
  const [leaving, setLeaving] = useState(false);
  if (!hasCookieSession(me)) return null;
  const leave = () => {
    setLeaving(true);
    void signOut();
  };
  return (
    <>
      {me?.user && (
        <span className="signed-in-as muted" title={`Signed in as ${me.user.name}`} data-testid="signed-in-as">
          {me.user.name}
        </span>
      )}
      <button className="button small ghost" onClick={leave} disabled={leaving} data-testid="sign-out">
        Sign out
      </button>
    </>
  );
}
