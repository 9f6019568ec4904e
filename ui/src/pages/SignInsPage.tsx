// The signed-in user's own sign-ins (`GET /api/auth/sessions`), each revocable. Revoking this
// browser's own sign-in signs it out at once.
import { useMutation, useQuery } from '@tanstack/react-query';
import { auth, type SignIn } from '../api/auth';
import { Card, Empty, ErrorNote, Loading } from '../components/ui';
import { ago } from '../lib/format';
import { keys, queryClient } from '../query/client';
import { signedOut } from '../store/auth';
import '../tools.css';

export function SignInsPage() {
  const signIns = useQuery({
    queryKey: keys.signIns,
    queryFn: auth.signIns,
    // No event says when another browser signs in: read again whenever the page opens.
    staleTime: 0,
  });
  const revoke = useMutation({
    mutationFn: (signIn: SignIn) => auth.revokeSignIn(signIn.id),
    onSuccess: (_, signIn) => {
      // This browser's cookie no longer works: show the login page rather than wait for a 401.
      if (signIn.current) signedOut();
      else void queryClient.invalidateQueries({ queryKey: keys.signIns });
    },
  });
  const list = signIns.data ?? [];
  return (
    <div className="page" data-testid="sign-ins-page">
      <div className="page-head">
        <div>
          <h1>Sign-in sessions</h1>
          <p className="description">
            Every browser signed in with your name. Revoke one you do not recognise or no longer use: its sign-in stops
            working at once.
          </p>
        </div>
      </div>
      <Card className="tools-card" title={`${list.length} ${list.length === 1 ? 'sign-in' : 'sign-ins'}`}>
        {signIns.isPending && <Loading />}
        <ErrorNote error={signIns.error?.message} what="read your sign-ins" />
        <ErrorNote error={revoke.error?.message} what="revoke the sign-in" />
        {signIns.isSuccess && list.length === 0 && (
          <Empty title="No sign-in.">Signing in on the login page starts one; a token or HTTP Basic does not.</Empty>
        )}
        {list.length > 0 && (
          <div className="scroll-box">
            <table className="table">
              <thead>
                <tr>
                  <th>Signed in</th>
                  <th>Last seen</th>
                  <th>Expires</th>
                  <th>From</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {list.map((s) => (
                  <SignInRow key={s.id} signIn={s} busy={revoke.isPending} onRevoke={() => revoke.mutate(s)} />
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Card>
    </div>
  );
}

function When({ iso }: { iso: string }) {
  return <span title={iso}>{ago(iso)}</span>;
}

function SignInRow(props: { signIn: SignIn; busy: boolean; onRevoke: () => void }) {
  const { signIn } = props;
  return (
    <tr data-testid="sign-in" data-current={signIn.current}>
      <td>
        <When iso={signIn.created_at} />
        {signIn.current && <> <span className="badge">this browser</span></>}
      </td>
      <td>
        <When iso={signIn.last_seen_at} />
      </td>
      <td>{new Date(signIn.expires_at).toLocaleString()}</td>
      <td>
        <div>{signIn.address ?? <span className="muted">unknown address</span>}</div>
        {signIn.user_agent && <div className="muted small wrap-anywhere">{signIn.user_agent}</div>}
      </td>
      <td>
        <button
          className="button small danger-ghost"
          onClick={props.onRevoke}
          disabled={props.busy}
          aria-label={signIn.current ? 'Revoke this browser’s sign-in (signs you out)' : `Revoke the sign-in from ${signIn.created_at}`}
        >
          Revoke
        </button>
      </td>
    </tr>
  );
}
