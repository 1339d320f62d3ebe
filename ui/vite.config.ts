import { defineConfig } from "vite";

// Tauri serves dist/ from its own protocol: relative asset paths, no external URLs.
export default defineConfig({
  base: "./",
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: { outDir: "dist", target: "es2022", sourcemap: false, chunkSizeWarningLimit: 1000 },
  test: { environment: "node", include: ["src/**/*.test.ts"] },
});
