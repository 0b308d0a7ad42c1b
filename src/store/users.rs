//! Users and their roles. Roles are ordered, each allowing what the ones below it allow:
//! `viewer` (read) < `deployer` (sync, refresh) < `approver` (approve, reject) < `admin`
//! (clusters, repositories, users). An approver may be limited to named clusters. The store
//! keeps at least one admin: demoting or deleting the last one is refused
//! ([`StoreError::LastAdmin`]), checked inside the writing transaction.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sqlx::any::{Any, AnyTypeInfo};
use sqlx::error::BoxDynError;

use super::{Backend, Store, StoreError};

/// What a user (or an API token) may do; see the module documentation for the order.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads Apps, clusters and repositories.
    Viewer,
    /// A viewer who may also sync and refresh Apps.
    Deployer,
    /// A deployer who may also approve and reject Held plans (on its clusters, if limited).
    Approver,
    /// Everything: clusters, repositories, users, the audit log.
    Admin,
}

impl Role {
    /// Every role, lowest first.
    pub const ALL: [Role; 4] = [Role::Viewer, Role::Deployer, Role::Approver, Role::Admin];

    /// The role's name as the API and the database spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Deployer => "deployer",
            Role::Approver => "approver",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is not a role.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a role (expected viewer, deployer, approver or admin)")]
pub struct UnknownRole {
    /// The text given (at most 64 characters of it).
    pub text: String,
}

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(text: &str) -> Result<Role, UnknownRole> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == text)
            .ok_or_else(|| UnknownRole {
                text: text.chars().take(64).collect(),
            })
    }
}

/// Roles are stored as their names (TEXT).
impl sqlx::Type<Any> for Role {
    fn type_info() -> AnyTypeInfo {
        <String as sqlx::Type<Any>>::type_info()
    }
}

/// A stored role that is not a role is a decode error (the database was edited).
impl<'r> sqlx::Decode<'r, Any> for Role {
    fn decode(value: <Any as sqlx::Database>::ValueRef<'r>) -> Result<Role, BoxDynError> {
        let text = <String as sqlx::Decode<Any>>::decode(value)?;
        Ok(text.parse()?)
    }
}

/// A user as stored, without the password hash (also the users API's answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct User {
    /// The user name.
    pub username: String,
    /// What the user may do.
    pub role: Role,
    /// For approvers: the clusters they may approve on (`None`: every cluster).
    pub clusters: Option<Vec<String>>,
    /// The user's email address (four-eyes approval matches Git commit authors by it).
    pub email: Option<String>,
    /// When the user was created (RFC 3339).
    pub created_at: String,
}

impl User {
    /// Whether this user may approve or reject plans for Apps on `cluster` as far as the
    /// approver's cluster list goes (the role itself is checked by the route).
    pub fn may_decide_on(&self, cluster: &str) -> bool {
        self.role == Role::Admin
            || self
                .clusters
                .as_ref()
                .is_none_or(|clusters| clusters.iter().any(|c| c == cluster))
    }
}

#[derive(sqlx::FromRow)]
struct UserRow {
    username: String,
    role: Role,
    approver_clusters: Option<String>,
    email: Option<String>,
    created_at: String,
}

impl TryFrom<UserRow> for User {
    type Error = StoreError;

    fn try_from(row: UserRow) -> Result<User, StoreError> {
        let clusters = row
            .approver_clusters
            .map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|err| StoreError::Corrupt {
                field: "users.approver_clusters",
                reason: err.to_string(),
            })?;
        Ok(User {
            username: row.username,
            role: row.role,
            clusters,
            email: row.email,
            created_at: row.created_at,
        })
    }
}

fn clusters_json(clusters: Option<&[String]>) -> Option<String> {
    // A list of strings always serialises.
    clusters.map(|c| serde_json::Value::from(c).to_string())
}

impl Store {
    /// Creates `user` with `password_hash`; [`StoreError::Duplicate`] when the name is taken.
    pub async fn create_user(&self, user: &User, password_hash: &str) -> Result<(), StoreError> {
        let result = sqlx::query(
            "INSERT INTO users (username, password_hash, created_at, role, approver_clusters, email) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&user.username)
        .bind(password_hash)
        .bind(&user.created_at)
        .bind(user.role.as_str())
        .bind(clusters_json(user.clusters.as_deref()))
        .bind(user.email.as_deref())
        .execute(&self.pool)
        .await;
        Store::inserted(result, || format!("user {}", user.username))
    }

    /// Every user, by name.
    pub async fn users(&self) -> Result<Vec<User>, StoreError> {
        let rows: Vec<UserRow> = sqlx::query_as(
            "SELECT username, role, approver_clusters, email, created_at \
             FROM users ORDER BY username",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(User::try_from).collect()
    }

    /// The user `username`, if it exists.
    pub async fn user(&self, username: &str) -> Result<Option<User>, StoreError> {
        let row: Option<UserRow> = sqlx::query_as(
            "SELECT username, role, approver_clusters, email, created_at \
             FROM users WHERE username = $1",
        )
        .bind(username)
        .fetch_optional(&self.pool)
        .await?;
        row.map(User::try_from).transpose()
    }

    /// Whether any user exists (a fresh store has none until the bootstrap admin).
    pub async fn has_users(&self) -> Result<bool, StoreError> {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
            .fetch_one(&self.pool)
            .await?;
        Ok(count > 0)
    }

    /// Writes the role, cluster list and email of `user` (found by its name); false when there
    /// is no such user. Demoting the last admin is refused ([`StoreError::LastAdmin`]).
    pub async fn update_user(&self, user: &User) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        if user.role != Role::Admin {
            self.keep_an_admin(&mut tx, &user.username).await?;
        }
        let updated = sqlx::query(
            "UPDATE users SET role = $1, approver_clusters = $2, email = $3 WHERE username = $4",
        )
        .bind(user.role.as_str())
        .bind(clusters_json(user.clusters.as_deref()))
        .bind(user.email.as_deref())
        .bind(&user.username)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(updated.rows_affected() > 0)
    }

    /// Deletes `username` with its sessions and API tokens, in one transaction; false when
    /// there is no such user. Deleting the last admin is refused ([`StoreError::LastAdmin`]).
    pub async fn delete_user(&self, username: &str) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        self.keep_an_admin(&mut tx, username).await?;
        for delete in [
            "DELETE FROM sessions WHERE username = $1",
            "DELETE FROM api_tokens WHERE username = $1",
        ] {
            sqlx::query(delete).bind(username).execute(&mut *tx).await?;
        }
        let deleted = sqlx::query("DELETE FROM users WHERE username = $1")
            .bind(username)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(deleted.rows_affected() > 0)
    }

    /// Refuses (inside `tx`) to take the admin role from `username` when it is the only admin.
    /// On PostgreSQL the admins' rows are locked, so two transactions demoting two admins at
    /// once cannot both pass; SQLite write transactions are serialised already.
    async fn keep_an_admin(
        &self,
        tx: &mut sqlx::Transaction<'static, Any>,
        username: &str,
    ) -> Result<(), StoreError> {
        let admins: Vec<String> = sqlx::query_scalar(match self.backend {
            Backend::Postgres => "SELECT username FROM users WHERE role = 'admin' FOR UPDATE",
            Backend::Sqlite => "SELECT username FROM users WHERE role = 'admin'",
        })
        .fetch_all(&mut **tx)
        .await?;
        if admins == [username] {
            return Err(StoreError::LastAdmin(username.to_string()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_and_parse_only_their_names() {
        assert!(Role::Viewer < Role::Deployer);
        assert!(Role::Deployer < Role::Approver);
        assert!(Role::Approver < Role::Admin);
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
            assert_eq!(serde_json::to_value(role).unwrap(), role.as_str());
        }
        for bad in [
            "",
            "Admin",
            "ADMIN",
            " admin",
            "root",
            "admin\0",
            "viewer,admin",
        ] {
            let err = bad.parse::<Role>().unwrap_err();
            assert!(err.to_string().contains("is not a role"), "{err}");
        }
        let long = "x".repeat(1 << 20).parse::<Role>().unwrap_err();
        assert!(long.to_string().len() < 200);
    }

    #[test]
    fn only_limited_approvers_are_kept_to_their_clusters() {
        let user = |role, clusters: Option<&[&str]>| User {
            username: "u".into(),
            role,
            clusters: clusters.map(|c| c.iter().map(|s| s.to_string()).collect()),
            email: None,
            created_at: String::new(),
        };
        assert!(user(Role::Approver, None).may_decide_on("prod"));
        assert!(user(Role::Approver, Some(&["staging"])).may_decide_on("staging"));
        assert!(!user(Role::Approver, Some(&["staging"])).may_decide_on("prod"));
        assert!(!user(Role::Approver, Some(&[])).may_decide_on("prod"));
        assert!(user(Role::Admin, Some(&["staging"])).may_decide_on("prod"));
    }
}
