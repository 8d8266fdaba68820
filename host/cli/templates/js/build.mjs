// Builds {{name}}.wasm with componentize-js's library API. (The `jco
// componentize` CLI of jco 1.35 cannot read any path: "failed to get path
// metadata".) `http` and `fetch-event` are disabled: chatmill gives adapters
// no network, and a component importing `wasi:http` does not link.
import { writeFile } from 'node:fs/promises';
import { componentize } from '@bytecodealliance/componentize-js';

const { component } = await componentize({
  sourcePath: 'src/adapter.js',
  witPath: 'wit',
  worldName: 'adapter',
  disableFeatures: ['http', 'fetch-event'],
});
await writeFile('{{name}}.wasm', component);
console.log(`wrote {{name}}.wasm (${component.length} bytes)`);
