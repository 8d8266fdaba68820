//! A new format needs no host rebuild: an adapter built outside the host's
//! crate graph (examples/adapter-linechat) is added with `chatmill adapters
//! add` and then imports a file only it understands.

use crate::support::*;

#[test]
fn a_third_party_adapter_is_added_used_and_removed() {
    let env = Env::new();
    let input = env.write(
        "notes/team.linechat",
        std::fs::read(linechat_fixture()).unwrap(),
    );

    // Before: no built-in adapter understands the file.
    let before = env.run(&["parse", input.to_str().unwrap()]);
    assert_eq!(before.code, 1, "{before:?}");
    assert!(
        before.stderr.contains("no adapter recognizes"),
        "{}",
        before.stderr
    );
    assert!(before.stderr.contains("hint: "), "{}", before.stderr);

    let wasm = linechat_adapter();
    let add = env.run(&["adapters", "add", wasm.to_str().unwrap()]);
    assert_eq!(add.code, 0, "{add:?}");
    assert!(
        add.stdout.contains("installed adapter `linechat` 1.0.0"),
        "{add:?}"
    );
    assert!(env.adapters_dir().join("linechat.wasm").exists());

    let list = env.run(&["adapters", "list", "--json"]);
    assert_eq!(list.code, 0, "{list:?}");
    let listed = list.json();
    let lc = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "linechat")
        .unwrap_or_else(|| panic!("linechat not listed: {listed:#}"));
    assert_eq!(lc["source"], "user");
    assert_eq!(lc["version"], "1.0.0");
    assert_eq!(lc["api_version"], "0.1.0");

    let after = env.run(&["parse", input.to_str().unwrap()]);
    assert_eq!(after.code, 0, "{after:?}");
    let parsed = after.json();
    assert_eq!(parsed[0]["adapter"]["id"], "linechat");
    assert_eq!(parsed[0]["adapter"]["source"], "user");
    let conv = &parsed[0]["conversations"][0];
    assert_eq!(conv["id"], "team");
    let pairs = conv["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    assert_eq!(pairs[1]["user"][0]["text"], "Which one is safer?");
    assert_eq!(pairs[1]["timestamp"], "2024-05-01T10:02:40Z");
    assert!(
        pairs[1]["assistant"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Reopening on SIGHUP")
    );

    let rm = env.run(&["adapters", "remove", "linechat"]);
    assert_eq!(rm.code, 0, "{rm:?}");
    let gone = env.run(&["parse", input.to_str().unwrap()]);
    assert_eq!(gone.code, 1, "{gone:?}");
}

#[test]
fn a_dev_adapter_given_with_flag_is_used_for_one_run_only() {
    let env = Env::new();
    let wasm = linechat_adapter();
    let run = env.run(&[
        "--adapter",
        wasm.to_str().unwrap(),
        "adapters",
        "info",
        "linechat",
        "--json",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let info = run.json();
    assert_eq!(info["source"], "dev");
    assert_eq!(info["formats"][0]["id"], "linechat-v1");
    // Nothing was installed.
    let again = env.run(&["adapters", "info", "linechat"]);
    assert_eq!(again.code, 2, "{again:?}");
}
