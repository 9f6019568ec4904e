/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The service embeds `dist/` and serves it at `/`; during `npm run dev` the API is proxied to a
// service started with `cargo run --release`.
export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, assetsDir: 'assets' },
  server: {
    proxy: {
      '/api': {
        target: process.env.CONDUIT_URL ?? 'http://127.0.0.1:3100',
        changeOrigin: true,
        // Terminals speak WebSocket (`/api/terminals/{id}/ws`).
        ws: true,
        // The service refuses writes from other origins; through this proxy they come from the
        // developer's own page, so they are presented as same-origin.
        configure: (proxy) => {
          proxy.on('proxyReq', (req) => req.removeHeader('origin'));
          proxy.on('proxyReqWs', (req) => req.removeHeader('origin'));
        },
      },
    },
  },
  test: { globals: true, environment: 'jsdom', include: ['src/**/*.test.{ts,tsx}'], setupFiles: ['src/test-setup.ts'] },
});
