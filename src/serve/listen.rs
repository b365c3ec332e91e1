//! Where `cuzk serve` listens: a TCP address (`127.0.0.1:9820`, Curio's default engine
//! address) or a unix socket (`unix:///run/curio/cuzk.sock`, as Curio writes it).

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// The default address: loopback, Curio's default `[Cuzk] Address`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9820";

/// A listening address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    /// TCP.
    Tcp(SocketAddr),
    /// A unix socket at this path.
    Unix(PathBuf),
}

impl ListenAddr {
    /// Parses `host:port`, `[v6]:port`, `unix:///abs/path` or `unix:path`.
    pub fn parse(text: &str) -> Result<ListenAddr, String> {
        let text = text.trim();
        if let Some(path) = text
            .strip_prefix("unix://")
            .or_else(|| text.strip_prefix("unix:"))
        {
            if path.is_empty() {
                return Err(format!(
                    "{text:?} names no socket path (hint: unix:///run/cuzk.sock)"
                ));
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        let mut addrs = text
            .to_socket_addrs()
            .map_err(|err| format!("{text:?} is not an address to listen on: {err} (hint: 127.0.0.1:9820 or unix:///run/cuzk.sock)"))?;
        addrs
            .next()
            .map(ListenAddr::Tcp)
            .ok_or_else(|| format!("{text:?} resolves to no address"))
    }

    /// Why listening here reaches beyond this host, if it does: the API has no
    /// authentication, so whoever reaches it can submit work and read proofs.
    pub fn beyond_host_note(&self) -> Option<String> {
        match self {
            ListenAddr::Tcp(addr) if !addr.ip().is_loopback() => Some(format!(
                "cuzk serve listens on {addr}, beyond this host: whoever reaches it can submit proofs and read them, the API has no authentication (hint: a firewall that admits only Curio's hosts, or --listen 127.0.0.1:9820 when Curio runs here)"
            )),
            _ => None,
        }
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(addr) => write!(f, "{addr}"),
            ListenAddr::Unix(path) => write!(f, "unix://{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_as_curio_writes_them() {
        assert_eq!(
            ListenAddr::parse("127.0.0.1:9820"),
            Ok(ListenAddr::Tcp("127.0.0.1:9820".parse().unwrap()))
        );
        assert_eq!(
            ListenAddr::parse("unix:///run/curio/cuzk.sock"),
            Ok(ListenAddr::Unix("/run/curio/cuzk.sock".into()))
        );
        assert_eq!(
            ListenAddr::parse("unix:cuzk.sock"),
            Ok(ListenAddr::Unix("cuzk.sock".into()))
        );
        assert!(ListenAddr::parse("unix://").is_err());
        assert!(ListenAddr::parse("no-port").is_err());
        assert!(ListenAddr::parse(DEFAULT_LISTEN)
            .unwrap()
            .beyond_host_note()
            .is_none());
        let open = ListenAddr::parse("0.0.0.0:9820").unwrap();
        assert!(open
            .beyond_host_note()
            .unwrap()
            .contains("no authentication"));
        assert!(ListenAddr::parse("unix:///x.sock")
            .unwrap()
            .beyond_host_note()
            .is_none());
    }
}
