//! Open cluster shell sessions: who opened which, on which cluster, until when, and how many
//! requests went through it. Kept in memory (a restart ends every session; `wardn clusters
//! shell` is run again), bounded per user, and expired after [`SESSION_TTL_SECS`].

use std::collections::HashMap;

use parking_lot::Mutex;

/// How long a shell session lasts at most (12 hours, as a login session).
pub const SESSION_TTL_SECS: i64 = 12 * 3600;

/// How many sessions one user may have open at once.
pub const MAX_SESSIONS_PER_USER: usize = 8;

/// One open session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Random id, part of the proxy URL.
    pub id: String,
    /// The user who opened it (only this user's credentials may use it).
    pub username: String,
    /// Who opened it, as audit entries name the caller.
    pub actor: String,
    /// The cluster it reaches.
    pub cluster: String,
    /// When it ends at the latest (Unix seconds).
    pub expires_at: i64,
    /// Requests forwarded so far.
    pub requests: u64,
    /// Of those, writes (POST, PUT, PATCH, DELETE).
    pub writes: u64,
}

/// Why a session cannot be opened or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// No open session has this id on this cluster (ended, expired, or never opened).
    #[error(
        "shell session {0:?} is not open on this cluster (ended or expired): run `wardn clusters shell` again"
    )]
    NotOpen(String),
    /// The session belongs to another user.
    #[error("shell session {0:?} belongs to another user")]
    OtherUser(String),
    /// The user has too many open sessions.
    #[error(
        "user {0:?} has {MAX_SESSIONS_PER_USER} open shell sessions: end one (exit its shell) first"
    )]
    TooMany(String),
}

/// The open sessions by id.
#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// Removes and returns the sessions expired at `now` (for their audit entries).
    pub fn expire(&self, now: i64) -> Vec<Session> {
        let mut open = self.open.lock();
        let expired: Vec<String> = open
            .values()
            .filter(|s| s.expires_at <= now)
            .map(|s| s.id.clone())
            .collect();
        expired.iter().filter_map(|id| open.remove(id)).collect()
    }

    /// Opens a session `id` for `username` on `cluster` at `now`, unless the user has
    /// [`MAX_SESSIONS_PER_USER`] open already.
    pub fn open(
        &self,
        id: String,
        username: &str,
        actor: &str,
        cluster: &str,
        now: i64,
    ) -> Result<Session, SessionError> {
        let mut open = self.open.lock();
        let held = open.values().filter(|s| s.username == username).count();
        if held >= MAX_SESSIONS_PER_USER {
            return Err(SessionError::TooMany(username.to_string()));
        }
        let session = Session {
            id: id.clone(),
            username: username.to_string(),
            actor: actor.to_string(),
            cluster: cluster.to_string(),
            expires_at: now + SESSION_TTL_SECS,
            requests: 0,
            writes: 0,
        };
        open.insert(id, session.clone());
        Ok(session)
    }

    /// Counts one request (a write when `write`) on session `id` of `cluster` made by
    /// `username` at `now`; refuses ended, expired, foreign and other users' sessions.
    pub fn record(
        &self,
        id: &str,
        cluster: &str,
        username: &str,
        write: bool,
        now: i64,
    ) -> Result<(), SessionError> {
        let mut open = self.open.lock();
        let session = open
            .get_mut(id)
            .filter(|s| s.cluster == cluster && s.expires_at > now)
            .ok_or_else(|| SessionError::NotOpen(id.to_string()))?;
        if session.username != username {
            return Err(SessionError::OtherUser(id.to_string()));
        }
        session.requests += 1;
        session.writes += u64::from(write);
        Ok(())
    }

    /// Ends session `id` of `cluster` for `username`, returning it (for its audit entry).
    pub fn end(&self, id: &str, cluster: &str, username: &str) -> Result<Session, SessionError> {
        let mut open = self.open.lock();
        match open.get(id) {
            Some(s) if s.cluster != cluster => Err(SessionError::NotOpen(id.to_string())),
            Some(s) if s.username != username => Err(SessionError::OtherUser(id.to_string())),
            Some(_) => open
                .remove(id)
                .ok_or_else(|| SessionError::NotOpen(id.to_string())),
            None => Err(SessionError::NotOpen(id.to_string())),
        }
    }

    /// How many sessions are open (for tests and the long-run check).
    pub fn len(&self) -> usize {
        self.open.lock().len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_bound_to_user_cluster_and_time() {
        let sessions = Sessions::default();
        sessions.open("a".into(), "ann", "ann", "c1", 0).unwrap();
        assert!(sessions.record("a", "c1", "ann", true, 1).is_ok());
        assert_eq!(
            sessions.record("a", "c1", "bob", false, 1),
            Err(SessionError::OtherUser("a".into()))
        );
        assert_eq!(
            sessions.record("a", "c2", "ann", false, 1),
            Err(SessionError::NotOpen("a".into()))
        );
        assert_eq!(
            sessions.record("a", "c1", "ann", false, SESSION_TTL_SECS),
            Err(SessionError::NotOpen("a".into()))
        );
        assert_eq!(
            sessions.end("a", "c1", "bob"),
            Err(SessionError::OtherUser("a".into()))
        );
        let ended = sessions.end("a", "c1", "ann").unwrap();
        assert_eq!((ended.requests, ended.writes), (1, 1));
        assert!(sessions.is_empty());
    }

    #[test]
    fn a_user_holds_a_bounded_number_and_expired_ones_go() {
        let sessions = Sessions::default();
        for i in 0..MAX_SESSIONS_PER_USER {
            sessions
                .open(format!("s{i}"), "ann", "ann", "c", 0)
                .unwrap();
        }
        assert!(matches!(
            sessions.open("x".into(), "ann", "ann", "c", 0),
            Err(SessionError::TooMany(_))
        ));
        sessions.open("b".into(), "bob", "bob", "c", 10).unwrap();
        let expired = sessions.expire(SESSION_TTL_SECS);
        assert_eq!(expired.len(), MAX_SESSIONS_PER_USER);
        assert_eq!(sessions.len(), 1);
    }
}
