import { adoptTokenFromUrl, authHeaders } from './client';

describe('the access token', () => {
  it('is taken from ?token= once, kept for the tab, and removed from the address bar', () => {
    sessionStorage.clear();
    expect(authHeaders()).toEqual({});
    window.history.replaceState(null, '', '/sessions/abc?token=s3cret&x=1#end');
    adoptTokenFromUrl();
    expect(authHeaders()).toEqual({ Authorization: 'Bearer s3cret' });
    expect(window.location.pathname + window.location.search + window.location.hash).toBe('/sessions/abc?x=1#end');
    window.history.replaceState(null, '', '/');
    adoptTokenFromUrl();
    expect(authHeaders()).toEqual({ Authorization: 'Bearer s3cret' });
  });
});
