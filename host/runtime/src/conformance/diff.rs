//! Where two JSON values first differ, said in one line: what a failed
//! comparison of adapter output shows the author.

use serde_json::Value;

/// The first difference between `expected` and `got`, as
/// `` at `/pointer`: expected …, got … ``; `None` when they are equal.
pub fn first_difference(expected: &Value, got: &Value) -> Option<String> {
    let mut pointer = String::new();
    walk(expected, got, &mut pointer)
}

fn walk(expected: &Value, got: &Value, pointer: &mut String) -> Option<String> {
    match (expected, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                let found = match b.get(k) {
                    Some(vb) => walk(va, vb, pointer),
                    None => Some(format!(
                        "at `{pointer}`: expected {}, got nothing",
                        short(va)
                    )),
                };
                if found.is_some() {
                    return found;
                }
                pointer.truncate(len);
            }
            let extra = b.keys().find(|k| !a.contains_key(*k))?;
            Some(format!(
                "at `{pointer}/{extra}`: expected nothing, got {}",
                short(&b[extra])
            ))
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                let len = pointer.len();
                pointer.push_str(&format!("/{i}"));
                if let Some(d) = walk(va, vb, pointer) {
                    return Some(d);
                }
                pointer.truncate(len);
            }
            (a.len() != b.len()).then(|| {
                format!(
                    "at `{pointer}`: expected {} elements, got {}",
                    a.len(),
                    b.len()
                )
            })
        }
        (a, b) if a == b => None,
        (a, b) => Some(format!(
            "at `{pointer}`: expected {}, got {}",
            short(a),
            short(b)
        )),
    }
}

/// A value for a one-line message: at most 80 characters of its JSON.
fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn equal_values_have_no_difference() {
        let v = json!({"a": [1, {"b": "c"}]});
        assert_eq!(first_difference(&v, &v.clone()), None);
    }

    #[test]
    fn the_first_difference_is_named_by_its_pointer() {
        let a = json!({"f.txt": [{"id": "x", "pairs": [1, 2]}]});
        let b = json!({"f.txt": [{"id": "y", "pairs": [1, 2]}]});
        assert_eq!(
            first_difference(&a, &b).unwrap(),
            "at `/f.txt/0/id`: expected \"x\", got \"y\""
        );
        let c = json!({"f.txt": [{"id": "x", "pairs": [1]}]});
        assert_eq!(
            first_difference(&a, &c).unwrap(),
            "at `/f.txt/0/pairs`: expected 2 elements, got 1"
        );
        let d = json!({"f.txt": [{"id": "x", "pairs": [1, 2], "title": "t"}]});
        assert_eq!(
            first_difference(&a, &d).unwrap(),
            "at `/f.txt/0/title`: expected nothing, got \"t\""
        );
        let e = json!({"a/b": 1});
        assert_eq!(
            first_difference(&e, &json!({})).unwrap(),
            "at `/a~1b`: expected 1, got nothing"
        );
    }
}
