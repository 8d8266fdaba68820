//! A crate's files as a graph: one node per module file, an edge wherever
//! one file's non-test code names a path into another.
//!
//! A re-export (`pub use child::Thing;`) is a facade, not a use: it makes no
//! edge, and a path through it (`super::Thing`) leads to the module that
//! defines the item.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::source;

pub struct Crate {
    /// Module path (`""` for the crate root, `import::select`) → its
    /// blanked non-test source.
    pub modules: BTreeMap<String, String>,
}

impl Crate {
    pub fn read(src: &Path) -> Self {
        let mut modules = BTreeMap::new();
        for path in source::rust_files(src) {
            if source::is_test_file(path.strip_prefix(src).unwrap()) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            modules.insert(module_path(src, &path), source::without_tests(&text));
        }
        Self { modules }
    }

    /// Every (from, to) between two different module files, once.
    pub fn edges(&self) -> Vec<(String, String)> {
        let mut out = BTreeSet::new();
        let facade = self.reexports();
        for (from, text) in &self.modules {
            for path in paths(text, self.children(from)) {
                let to = self.resolve(from, &path, &facade);
                if let Some(to) = to
                    && to != *from
                {
                    out.insert((from.clone(), to));
                }
            }
        }
        out.into_iter().collect()
    }

    /// The child modules of `m`, by name.
    fn children(&self, m: &str) -> BTreeSet<String> {
        let prefix = if m.is_empty() {
            String::new()
        } else {
            format!("{m}::")
        };
        self.modules
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .filter(|rest| !rest.is_empty() && !rest.contains("::"))
            .map(str::to_string)
            .collect()
    }

    /// The module a path names (its longest prefix that is a module file),
    /// following re-exports; `None` for a path out of the crate.
    fn resolve(&self, from: &str, path: &[String], facade: &Facades) -> Option<String> {
        let (mut cur, rest) = start(from, path, &self.children(from))?;
        for (i, seg) in rest.iter().enumerate() {
            let next = join(&cur, seg);
            if self.modules.contains_key(&next) {
                cur = next;
                continue;
            }
            // An item re-exported by `cur`: the module that defines it.
            if let Some(target) = facade.get(&(cur.clone(), seg.clone())) {
                let mut full = target.clone();
                full.extend(rest[i + 1..].iter().cloned());
                return self.resolve_absolute(&full);
            }
            break;
        }
        Some(cur)
    }

    fn resolve_absolute(&self, path: &[String]) -> Option<String> {
        let mut cur = String::new();
        for seg in path {
            let next = join(&cur, seg);
            if !self.modules.contains_key(&next) {
                break;
            }
            cur = next;
        }
        Some(cur)
    }

    /// What every module re-exports, as (module, name) → the absolute path
    /// of the item.
    fn reexports(&self) -> Facades {
        let mut out = Facades::new();
        for (m, text) in &self.modules {
            for (name, path) in pub_uses(text) {
                if let Some((base, rest)) = start(m, &path, &self.children(m)) {
                    let mut full: Vec<String> = base
                        .split("::")
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect();
                    full.extend(rest);
                    out.insert((m.clone(), name), full);
                }
            }
        }
        out
    }
}

type Facades = BTreeMap<(String, String), Vec<String>>;

fn join(m: &str, seg: &str) -> String {
    if m.is_empty() {
        seg.to_string()
    } else {
        format!("{m}::{seg}")
    }
}

/// The module a path starts from and the segments after its anchor:
/// `crate::`, `super::` (any number), `self::`, or a child module's name.
fn start(
    from: &str,
    path: &[String],
    children: &BTreeSet<String>,
) -> Option<(String, Vec<String>)> {
    let first = path.first()?;
    match first.as_str() {
        "crate" | "$crate" => Some((String::new(), path[1..].to_vec())),
        "self" => Some((from.to_string(), path[1..].to_vec())),
        "super" => {
            let mut cur = from.to_string();
            let mut i = 0;
            while path.get(i).is_some_and(|s| s == "super") {
                cur = cur
                    .rsplit_once("::")
                    .map_or(String::new(), |(p, _)| p.to_string());
                i += 1;
            }
            Some((cur, path[i..].to_vec()))
        }
        child if children.contains(child) => Some((from.to_string(), path.to_vec())),
        _ => None,
    }
}

/// `src/import/select.rs` → `import::select`; `mod.rs`, `lib.rs` and
/// `main.rs` name their folder.
fn module_path(src: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod")) {
        parts.pop();
    }
    if parts.len() == 1 && matches!(parts[0].as_str(), "lib" | "main") {
        parts.clear();
    }
    parts.join("::")
}

/// Every path in `text` that starts with `crate`, `$crate`, `super`, `self`
/// or one of `children`, with `use` groups (`a::{b, c::d}`) expanded. The
/// paths of re-exports (`pub use`) are left out.
fn paths(text: &str, children: BTreeSet<String>) -> Vec<Vec<String>> {
    let text = without_pub_uses(text);
    let tokens = tokenize(&text);
    let mut out = Vec::new();
    for i in 0..tokens.len() {
        let t = &tokens[i];
        let anchored =
            matches!(t.as_str(), "crate" | "$crate" | "super" | "self") || children.contains(t);
        let after_sep = i > 0 && tokens[i - 1] == "::";
        if !anchored || after_sep || tokens.get(i + 1).is_none_or(|n| n != "::") {
            continue;
        }
        expand(&tokens, i, Vec::new(), &mut out);
    }
    out
}

/// The path at `tokens[i..]`, after `prefix`, into `out` (a group gives one
/// path per member).
fn expand(tokens: &[String], mut i: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    loop {
        match tokens.get(i).map(String::as_str) {
            Some("{") => {
                let mut depth = 0;
                let mut member_start = true;
                let mut j = i;
                while let Some(t) = tokens.get(j) {
                    match t.as_str() {
                        "{" => {
                            depth += 1;
                            member_start = true;
                        }
                        "}" => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        "," if depth == 1 => member_start = true,
                        _ if depth == 1 && member_start => {
                            member_start = false;
                            expand(tokens, j, prefix.clone(), out);
                        }
                        _ => {}
                    }
                    j += 1;
                }
                return;
            }
            Some(t) if is_ident(t) => {
                prefix.push(t.to_string());
                if tokens.get(i + 1).is_some_and(|n| n == "::") {
                    i += 2;
                } else {
                    out.push(prefix);
                    return;
                }
            }
            _ => {
                out.push(prefix);
                return;
            }
        }
    }
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
}

/// Identifiers (with `$crate`), `::`, and single punctuation characters.
fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// The `pub use` / `pub(crate) use` statements of `text`, blanked out.
fn without_pub_uses(text: &str) -> String {
    let mut out = text.to_string();
    for (start, end) in pub_use_spans(text) {
        out.replace_range(start..end, &" ".repeat(end - start));
    }
    out
}

fn pub_use_spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (start, _) in text.match_indices("pub") {
        if start > 0 && text.as_bytes()[start - 1].is_ascii_alphanumeric() {
            continue;
        }
        let rest = &text[start + 3..];
        let rest_trim = rest.trim_start();
        let after_vis = if let Some(r) = rest_trim.strip_prefix('(') {
            r.split_once(')').map(|(_, r)| r.trim_start())
        } else {
            Some(rest_trim)
        };
        if let Some(r) = after_vis
            && r.starts_with("use ")
            && let Some(semi) = text[start..].find(';')
        {
            out.push((start, start + semi + 1));
        }
    }
    out
}

/// Each name a `pub use` of `text` makes, with the path it names.
fn pub_uses(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (start, end) in pub_use_spans(text) {
        let tokens = tokenize(&text[start..end]);
        let Some(at) = tokens.iter().position(|t| t == "use") else {
            continue;
        };
        let mut paths = Vec::new();
        expand(&tokens, at + 1, Vec::new(), &mut paths);
        for p in paths {
            if let Some(name) = p.last().filter(|n| *n != "self" && *n != "*") {
                out.push((name.clone(), p.clone()));
            }
        }
    }
    out
}

/// One cycle through each group of files that reach each other, closed
/// (its first module again at the end).
pub fn loops(krate: &Crate) -> Vec<Vec<String>> {
    let edges = krate.edges();
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in &edges {
        next.entry(a).or_default().push(b);
    }
    let mut seen_in_cycle: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for start in krate.modules.keys() {
        if seen_in_cycle.contains(start) {
            continue;
        }
        if let Some(cycle) = cycle_from(start, &next) {
            seen_in_cycle.extend(cycle.iter().cloned());
            out.push(cycle);
        }
    }
    out
}

/// The shortest path from `start` back to itself (breadth first).
fn cycle_from(start: &str, next: &BTreeMap<&str, Vec<&str>>) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(m) = queue.pop_front() {
        for &n in next.get(m).into_iter().flatten() {
            if n == start {
                let mut back = Vec::new();
                let mut cur = m;
                while cur != start {
                    back.push(cur.to_string());
                    cur = came_from[cur];
                }
                back.reverse();
                let mut path = vec![start.to_string()];
                path.extend(back);
                path.push(start.to_string());
                return Some(path);
            }
            if !came_from.contains_key(n) && n != start {
                came_from.insert(n, m);
                queue.push_back(n);
            }
        }
    }
    None
}
