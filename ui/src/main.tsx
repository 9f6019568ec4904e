import { StrictMode, useEffect } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryClientProvider } from '@tanstack/react-query';
import { queryClient } from './query/client';
import { BrowserRouter, Link, Route, Routes } from 'react-router-dom';
import { Layout } from './components/Layout';
import { Empty } from './components/ui';
import { DashboardPage } from './pages/DashboardPage';
import { ProjectPage } from './pages/ProjectPage';
import { SessionPage } from './pages/SessionPage';
import { AgentsPage } from './pages/AgentsPage';
import { AgentPage } from './pages/AgentPage';
import { WebhooksPage } from './pages/WebhooksPage';
import { PermissionsPage } from './pages/PermissionsPage';
import { listenForPageFrames } from './query/pageFrames';
import { RulesPage } from './pages/RulesPage';
import { LocksPage } from './pages/LocksPage';
import { ProcessesPage } from './pages/ProcessesPage';
import { ReviewPage } from './pages/ReviewPage';
import { SignInsPage } from './pages/SignInsPage';
import { AuthGate } from './components/AuthGate';
import { adoptTokenFromUrl } from './api/client';
import { connectLive } from './store/live';
import { applyTheme, loadTheme } from './lib/theme';
import './styles.css';
import './shell.css';

/** The app behind the auth gate: the live stream opens only once signed in. */
export function App() {
  return (
    <AuthGate>
      <SignedInApp />
    </AuthGate>
  );
}

function SignedInApp() {
  useEffect(() => connectLive(), []);
  useEffect(() => listenForPageFrames(), []);
  return (
    <Routes>
      <Route element={<Layout />}>
        <Route index element={<DashboardPage />} />
        <Route path="projects/:projectId" element={<ProjectPage />} />
        <Route path="sessions/:sessionId" element={<SessionPage />} />
        <Route path="agents" element={<AgentsPage />} />
        <Route path="agents/:agentId" element={<AgentPage />} />
        <Route path="webhooks" element={<WebhooksPage />} />
        <Route path="permissions" element={<PermissionsPage />} />
        <Route path="sessions/:sessionId/review" element={<ReviewPage />} />
        <Route path="rules" element={<RulesPage />} />
        <Route path="locks" element={<LocksPage />} />
        <Route path="processes" element={<ProcessesPage />} />
        <Route path="sign-ins" element={<SignInsPage />} />
        <Route
          path="*"
          element={
            <Empty title="There is no page here.">
              <Link to="/">Back to the dashboard</Link>
            </Empty>
          }
        />
      </Route>
    </Routes>
  );
}

adoptTokenFromUrl();
applyTheme(loadTheme());
// The first reads wait for the live stream (store/auth.ts `enter` holds them once signed in).
const root = document.getElementById('root');
if (root) {
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={queryClient}>
        <BrowserRouter>
          <App />
        </BrowserRouter>
      </QueryClientProvider>
    </StrictMode>,
  );
}
