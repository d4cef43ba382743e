//! `basic_auth_users` and `rate_limit`.
//!
//! A password is checked with bcrypt, as the exporters check it: a user
//! name that is not configured is checked against a stand-in hash of the
//! same cost, so the answer takes as long for every name. Checks run one
//! at a time (a client sending wrong passwords holds one core, not all),
//! and the outcome of the last 100 distinct (user, password) pairs is
//! remembered by a SHA-256 of them, so a scraper's every scrape costs one
//! hash lookup, not a bcrypt run.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_saphyr::Spanned;

use super::Mistake;

/// Outcomes remembered.
const CACHED: usize = 100;

/// The bcrypt costs a web config may use. bcrypt itself takes 4..=31, but
/// every cost step doubles the work: a check at 31 runs for hours, and
/// the stand-in hash is made at the highest cost when the config is
/// loaded (a cost of 31 kept serve from ever listening). 10 is the cost
/// the exporters' documentation uses (`htpasswd -nBC 10`), about 0.1 s
/// of one CPU here.
pub const COSTS: std::ops::RangeInclusive<u32> = 4..=10;

/// The configured users and their bcrypt hashes.
pub struct Users {
    hashes: BTreeMap<String, String>,
    /// Checked against when the user name is not configured.
    stand_in: String,
    cache: Mutex<HashMap<[u8; 32], bool>>,
    /// One bcrypt check at a time.
    checking: Mutex<()>,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Users")
            .field("names", &self.hashes.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Users {
    /// Checks every hash; makes the stand-in hash (one bcrypt run at the
    /// highest cost configured).
    pub(super) fn new(
        users: &BTreeMap<String, Spanned<String>>,
        notes: &mut Vec<String>,
    ) -> Result<Users, Mistake> {
        let mut hashes = BTreeMap::new();
        let mut costs = Vec::new();
        for (name, hash) in users {
            let line = hash.referenced.line();
            if name.contains(':') {
                return Err((
                    line,
                    format!(
                        "basic_auth_users: the user name {name:?} holds a `:`, which basic authentication cannot send; rename the user"
                    ),
                ));
            }
            let parts: bcrypt::HashParts = hash.value.parse().map_err(|_| {
                (
                    line,
                    format!(
                        "basic_auth_users: the password of {name:?} is not a bcrypt hash; make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`"
                    ),
                )
            })?;
            let cost = parts.get_cost();
            if !COSTS.contains(&cost) {
                return Err((
                    line,
                    format!(
                        "basic_auth_users: the password of {} is hashed at bcrypt cost {cost}; \
                         tally serve takes {}..={} (a check at cost {} takes about 0.1 s here, \
                         each step up doubles it, and every request pays it): hash it again \
                         with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`",
                        crate::text::Foreign(name),
                        COSTS.start(),
                        COSTS.end(),
                        COSTS.end()
                    ),
                ));
            }
            costs.push(cost);
            hashes.insert(name.clone(), hash.value.clone());
        }
        let cost = costs.iter().copied().max().unwrap_or(bcrypt::DEFAULT_COST);
        if costs.iter().any(|c| *c != cost) {
            notes.push(format!(
                "basic_auth_users: the hashes have different bcrypt costs ({}): a client can tell the users apart by answer time; hash every password at one cost",
                costs
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let stand_in = bcrypt::hash_with_salt(b"no such user", cost, [0x5a; 16])
            .map(|h| h.format_for_version(bcrypt::Version::TwoY))
            .map_err(|e| {
                (
                    1,
                    format!("basic_auth_users: cannot make a bcrypt hash: {e}"),
                )
            })?;
        Ok(Users {
            hashes,
            stand_in,
            cache: Mutex::new(HashMap::new()),
            checking: Mutex::new(()),
        })
    }

    /// Whether an `Authorization` header value names a user and the
    /// right password.
    pub fn check(&self, authorization: Option<&str>) -> bool {
        let Some((user, password)) = authorization.and_then(basic_credentials) else {
            return false;
        };
        let known = self.hashes.get(&user);
        let hash = known.unwrap_or(&self.stand_in);
        let key = cache_key(&user, hash, &password);
        if let Some(ok) = lock(&self.cache).get(&key) {
            return *ok && known.is_some();
        }
        let ok = {
            let _one = lock(&self.checking);
            bcrypt::verify(&password, hash).unwrap_or(false)
        } && known.is_some();
        let mut cache = lock(&self.cache);
        if cache.len() >= CACHED
            && let Some(old) = cache.keys().next().copied()
        {
            cache.remove(&old);
        }
        cache.insert(key, ok);
        ok
    }
}

fn cache_key(user: &str, hash: &str, password: &[u8]) -> [u8; 32] {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for part in [user.as_bytes(), hash.as_bytes(), password] {
        ctx.update(&(part.len() as u64).to_le_bytes());
        ctx.update(part);
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(ctx.finish().as_ref());
    key
}

/// The user and password of a `Basic` authorization (the user as text).
pub fn basic_credentials(value: &str) -> Option<(String, Vec<u8>)> {
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let colon = raw.iter().position(|&b| b == b':')?;
    let user = String::from_utf8(raw.get(..colon)?.to_vec()).ok()?;
    let password = raw.get(colon + 1..)?.to_vec();
    Some((user, password))
}

/// `rate_limit`: a token bucket of `burst` requests refilled one per
/// `interval` (Go's `rate.Limiter`); a request without a token gets 429.
#[derive(Debug)]
pub struct RateLimit {
    every: Duration,
    burst: u32,
    state: Mutex<(f64, Instant)>,
}

impl RateLimit {
    pub fn new(every: Duration, burst: u32) -> RateLimit {
        RateLimit {
            every,
            burst,
            state: Mutex::new((f64::from(burst), Instant::now())),
        }
    }

    /// Takes a token if there is one.
    pub fn allow(&self) -> bool {
        let mut s = lock(&self.state);
        let now = Instant::now();
        let earned = now.duration_since(s.1).as_secs_f64() / self.every.as_secs_f64().max(1e-9);
        s.0 = (s.0 + earned).min(f64::from(self.burst));
        s.1 = now;
        if s.0 >= 1.0 {
            s.0 -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users(list: &[(&str, &str)]) -> Result<Users, Mistake> {
        let text: String = std::iter::once("basic_auth_users:\n".to_string())
            .chain(list.iter().map(|(u, h)| format!("  {u}: '{h}'\n")))
            .collect();
        #[derive(serde::Deserialize)]
        struct F {
            basic_auth_users: BTreeMap<String, Spanned<String>>,
        }
        let f: F = serde_saphyr::from_str(&text).unwrap();
        Users::new(&f.basic_auth_users, &mut Vec::new())
    }

    fn basic(user: &str, password: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        )
    }

    /// A cost of 31 was accepted: the stand-in hash made at load ran for
    /// hours, serve never listened, and SIGHUP left a thread spinning;
    /// costs 3 and 32 said "cannot make a bcrypt hash". Each is refused at
    /// load, naming the range.
    #[test]
    fn a_bcrypt_cost_out_of_range_hashed_for_hours() {
        let at4 = bcrypt::hash("secret", 4).unwrap();
        for cost in ["03", "11", "31", "32"] {
            let hash = at4.replacen("$04$", &format!("${cost}$"), 1);
            let Err((line, msg)) = users(&[("prometheus", &hash)]) else {
                panic!("cost {cost} accepted");
            };
            assert_eq!(line, 2, "{msg}");
            assert!(
                msg.contains(&format!("bcrypt cost {}", cost.trim_start_matches('0')))
                    && msg.contains("4..=10"),
                "{msg}"
            );
        }
        let at10 = at4.replacen("$04$", "$10$", 1);
        assert!(users(&[("prometheus", &at10)]).is_ok());
    }

    #[test]
    fn the_right_password_passes_and_nothing_else() {
        let hash = bcrypt::hash("secret", 4).unwrap();
        let u = users(&[("prometheus", &hash)]).unwrap();
        assert!(u.check(Some(&basic("prometheus", "secret"))));
        // Twice: the second from the cache.
        assert!(u.check(Some(&basic("prometheus", "secret"))));
        assert!(!u.check(Some(&basic("prometheus", "wrong"))));
        assert!(!u.check(Some(&basic("nobody", "secret"))));
        assert!(!u.check(Some(&basic("nobody", "no such user"))));
        assert!(!u.check(None));
        assert!(!u.check(Some("Bearer abc")));
        assert!(!u.check(Some("Basic !!!")));
        assert!(u.check(Some(
            &basic("prometheus", "secret").replace("Basic", "basic")
        )));
    }

    #[test]
    fn a_hash_that_is_not_bcrypt_is_refused_at_load() {
        let (line, msg) = users(&[("a", "plain")]).err().unwrap();
        assert_eq!(line, 2);
        assert!(msg.contains("not a bcrypt hash"), "{msg}");
        let hash = bcrypt::hash("x", 4).unwrap();
        let (_, msg) = users(&[("a:b", &hash)]).err().unwrap();
        assert!(msg.contains("`:`"), "{msg}");
    }

    /// An unknown user name costs a bcrypt check at the configured cost,
    /// as a known one does: the answer time does not tell them apart.
    #[test]
    fn an_unknown_user_is_checked_against_a_hash_of_the_same_cost() {
        let hash = bcrypt::hash("secret", 5).unwrap();
        let u = users(&[("p", &hash)]).unwrap();
        let stand_in: bcrypt::HashParts = u.stand_in.parse().unwrap();
        assert_eq!(stand_in.get_cost(), 5);
        assert!(!u.check(Some(&basic("q", "secret"))));
        // The check ran (its outcome is remembered like any other).
        assert_eq!(lock(&u.cache).len(), 1);
        let mut notes = Vec::new();
        let text = format!(
            "basic_auth_users:\n  a: '{}'\n  b: '{}'\n",
            bcrypt::hash("x", 4).unwrap(),
            bcrypt::hash("x", 5).unwrap()
        );
        #[derive(serde::Deserialize)]
        struct F {
            basic_auth_users: BTreeMap<String, Spanned<String>>,
        }
        let f: F = serde_saphyr::from_str(&text).unwrap();
        Users::new(&f.basic_auth_users, &mut notes).unwrap();
        assert!(
            notes
                .iter()
                .any(|n| n.contains("different bcrypt costs (4, 5)")),
            "{notes:?}"
        );
    }

    #[test]
    fn the_cache_stays_bounded() {
        let hash = bcrypt::hash("secret", 4).unwrap();
        let u = users(&[("p", &hash)]).unwrap();
        for i in 0..(CACHED + 20) {
            assert!(!u.check(Some(&basic("p", &i.to_string()))));
        }
        assert!(lock(&u.cache).len() <= CACHED);
        assert!(u.check(Some(&basic("p", "secret"))));
    }

    #[test]
    fn the_rate_limit_refills() {
        let r = RateLimit::new(Duration::from_millis(20), 1);
        assert!(r.allow());
        assert!(!r.allow());
        std::thread::sleep(Duration::from_millis(30));
        assert!(r.allow());
    }
}
