//! Deliberately bad adapters are contained: each is stopped, reported with
//! the adapter, the input, what happened and a hint, and the other files of
//! the same run are still processed.

use crate::support::*;

fn bad(name: &str) -> String {
    bad_adapters().join(name).display().to_string()
}

#[test]
fn every_bad_adapter_is_contained_and_the_rest_of_the_run_succeeds() {
    let env = Env::new();
    for ext in ["loop", "alloc", "panic", "file", "flood", "items"] {
        env.write(&format!("in/probe.{ext}"), "anything\n");
    }
    let good = env.write(
        "in/team.linechat",
        std::fs::read(linechat_fixture()).unwrap(),
    );
    let linechat = linechat_adapter().display().to_string();
    let mut args = vec![
        "parse",
        "--adapter-timeout-ms",
        "1000",
        "--adapter-memory-mb",
        "256",
    ];
    let adapters = [
        bad("bad_loop.wasm"),
        bad("bad_alloc.wasm"),
        bad("bad_panic.wasm"),
        bad("bad_file.wasm"),
        bad("bad_flood.wasm"),
        linechat,
    ];
    for a in &adapters {
        args.push("--adapter");
        args.push(a);
    }
    args.push("in");
    let run = env.run(&args);
    assert_eq!(run.code, 1, "some inputs failed, so exit 1: {run:?}");
    let parsed = run.json();

    // The good file in the same run is fully parsed.
    let ok = entry(&parsed, "team.linechat");
    assert!(ok["error"].is_null(), "{ok:#}");
    assert_eq!(ok["conversations"][0]["pairs"].as_array().unwrap().len(), 2);
    assert!(good.exists(), "inputs are never touched");

    let error = |suffix: &str| -> String {
        let e = entry(&parsed, suffix);
        assert!(
            e["conversations"].is_null(),
            "{suffix} must not yield output: {e:#}"
        );
        let msg = e["error"]["message"].as_str().unwrap().to_string();
        let hint = e["error"]["hint"].as_str().unwrap_or_default();
        assert!(!hint.is_empty(), "{suffix}: no hint");
        assert!(
            msg.contains(suffix),
            "{suffix}: the message names the input: {msg}"
        );
        format!("{msg}\nhint: {hint}")
    };

    let m = error("probe.loop");
    assert!(
        m.contains("`bad-loop` 0.1.0") && m.contains("time limit of 1000 ms"),
        "{m}"
    );
    assert!(m.contains("--adapter-timeout-ms"), "{m}");

    let m = error("probe.alloc");
    assert!(
        m.contains("`bad-alloc` 0.1.0") && m.contains("memory limit of 256 MiB"),
        "{m}"
    );
    assert!(m.contains("--adapter-memory-mb"), "{m}");

    let m = error("probe.panic");
    assert!(m.contains("`bad-panic` 0.1.0 panicked"), "{m}");
    assert!(
        m.contains("index out of bounds"),
        "the panic message is captured: {m}"
    );

    let m = error("probe.flood");
    assert!(
        m.contains("`bad-flood`") && m.contains("MiB of text per batch"),
        "{m}"
    );
    let m = error("probe.items");
    assert!(m.contains("`bad-flood`") && m.contains("per batch"), "{m}");

    // Host access fails inside the guest; nothing of the host leaks out.
    let probe = entry(&parsed, "probe.file");
    assert!(probe["error"].is_null(), "{probe:#}");
    let text = probe["conversations"][0]["pairs"][0]["assistant"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("file=denied"), "{text}");
    assert!(text.contains("dir=denied"), "{text}");
    assert!(text.contains("env=denied"), "{text}");
    assert!(text.contains("net=denied"), "{text}");
    assert!(!text.contains("root:"), "host file content leaked: {text}");

    // The same reports reach stderr as `error:` / `hint:` lines.
    assert!(
        run.stderr.contains("error: adapter `bad-loop` 0.1.0"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint: "), "{}", run.stderr);
}

#[test]
fn an_installed_adapter_for_another_api_or_not_a_component_is_skipped_with_a_warning() {
    let env = Env::new();
    std::fs::create_dir_all(env.adapters_dir()).unwrap();
    std::fs::copy(bad("old_api.wasm"), env.adapters_dir().join("old-api.wasm")).unwrap();
    env.write("adapters/garbage.wasm", b"this is not wasm at all");
    // A core module (wasm32-unknown-unknown style), not a component.
    env.write("adapters/core.wasm", b"\0asm\x01\0\0\0");
    std::fs::copy(linechat_adapter(), env.adapters_dir().join("linechat.wasm")).unwrap();
    let input = env.write("chat.linechat", std::fs::read(linechat_fixture()).unwrap());

    let run = env.run(&["parse", input.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.json()[0]["conversations"][0]["pairs"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(
        run.stderr
            .contains("was built for adapter API 0.2.0; this chatmill supports API 0.1.0"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("garbage.wasm` is not a WebAssembly component"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("core WebAssembly module, not a component"),
        "{}",
        run.stderr
    );
}

#[test]
fn adding_an_adapter_for_another_api_is_refused_with_what_to_do() {
    let env = Env::new();
    let run = env.run(&["adapters", "add", &bad("old_api.wasm")]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("error: adapter `"), "{}", run.stderr);
    assert!(
        run.stderr.contains("built for adapter API 0.2.0"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hint: rebuild the adapter with the SDK for API 0.1.0"),
        "{}",
        run.stderr
    );
    assert!(!env.adapters_dir().join("old-api.wasm").exists());

    let junk = env.write("junk.wasm", b"\x7fELF not wasm");
    let run = env.run(&["adapters", "add", junk.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("is not a WebAssembly component"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hint: an adapter must be a component built for `wasm32-wasip2`"),
        "{}",
        run.stderr
    );
}
