//! A hit read back from `chunks`: its columns, a filter as SQL, and the
//! queries that return hits (by rowid, or by any SQL with a filter).

use rusqlite::OptionalExtension;

use super::store::SqliteStore;
use crate::{ChunkMeta, Filter, Hit, IndexError};

/// A hit's columns (its text is not among them: see `fts_table!`).
const COLUMNS: &str = "chunk_id, timestamp, platform, agent_id, conversation_id, title, topics, model, turn_range, source_file, path, project";

/// How many `COLUMNS` there are: a query's own column after them is at
/// this index.
pub(super) const COLUMN_COUNT: usize = 12;

fn hit_from_row(r: &rusqlite::Row<'_>, score: f32) -> rusqlite::Result<Hit> {
    let topics: String = r.get(6)?;
    Ok(Hit {
        chunk_id: r.get(0)?,
        score,
        meta: ChunkMeta {
            timestamp: r.get(1)?,
            platform: r.get(2)?,
            agent_id: r.get(3)?,
            conversation_id: r.get(4)?,
            title: r.get(5)?,
            topics: serde_json::from_str(&topics).unwrap_or_default(),
            model: r.get(7)?,
            turn_range: r.get(8)?,
            source_file: r.get(9)?,
            path: r.get(10)?,
            project: r.get(11)?,
        },
        document: String::new(),
    })
}

/// SQL for a filter: ` AND …` clauses and their parameters.
pub(super) fn filter_sql(f: &Filter) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut sql = String::new();
    let mut args = Vec::new();
    if let Some(a) = &f.agent_id {
        sql.push_str(" AND c.agent_id = ?");
        args.push(Value::Text(a.clone()));
    }
    if let Some(p) = &f.platform {
        sql.push_str(" AND c.platform = ?");
        args.push(Value::Text(p.clone()));
    }
    if let Some(c) = &f.conversation_id {
        sql.push_str(" AND c.conversation_id = ?");
        args.push(Value::Text(c.clone()));
    }
    if let Some(p) = &f.project {
        sql.push_str(" AND c.project = ?");
        args.push(Value::Text(p.clone()));
    }
    if let Some(s) = f.since {
        sql.push_str(" AND c.timestamp >= ?");
        args.push(Value::Integer(s));
    }
    if let Some(u) = f.until {
        sql.push_str(" AND c.timestamp <= ?");
        args.push(Value::Integer(u));
    }
    (sql, args)
}

/// `COLUMNS` as `c.<name>` (queries join other tables).
pub(super) fn qualified_columns() -> String {
    COLUMNS
        .split(", ")
        .map(|c| format!("c.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl SqliteStore {
    /// The hits of the chunks `scored` (rowid, score), in that order.
    pub(super) fn hits_by_id(&self, scored: &[(i64, f32)]) -> Result<Vec<Hit>, IndexError> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM chunks WHERE id = ?1"))
            .map_err(|e| self.e(e))?;
        let mut out = Vec::with_capacity(scored.len());
        for &(id, score) in scored {
            if let Some(h) = stmt
                .query_row([id], |r| hit_from_row(r, score))
                .optional()
                .map_err(|e| self.e(e))?
            {
                out.push(h);
            }
        }
        Ok(out)
    }

    /// Runs `sql` (with `{filter}` where the filter's clauses go): the
    /// MATCH text first when given, the filter's values, then `k`.
    pub(super) fn select(
        &self,
        sql: &str,
        matching: Option<String>,
        k: usize,
        filter: &Filter,
        score: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<f32>,
    ) -> Result<Vec<Hit>, IndexError> {
        let (where_sql, filter_args) = filter_sql(filter);
        let sql = sql.replace("{filter}", &where_sql);
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        args.extend(matching.map(rusqlite::types::Value::Text));
        args.extend(filter_args);
        args.push(rusqlite::types::Value::Integer(k as i64));
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&sql).map_err(|e| self.e(e))?;
        let hits = stmt
            .query_map(rusqlite::params_from_iter(args), |r| {
                let s = score(r)?;
                hit_from_row(r, s)
            })
            .map_err(|e| self.e(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.e(e))?;
        Ok(hits)
    }
}
