//! Who owns a staging area, and whether that owner is provably gone.
//!
//! Each staging area holds a lock file [`LOCK_NAME`] that its run keeps
//! open with an exclusive advisory lock (`flock`) for as long as the area
//! lives, and whose text records the run: process id, the process's start
//! time (clock ticks since boot, from `/proc/<pid>/stat`) and the boot id
//! (`/proc/sys/kernel/random/boot_id`), so that a reused pid or a reboot is
//! not taken for the original run.
//!
//! A later run removes an area only when its owner is provably gone: the
//! lock can be taken (the kernel releases it when a process dies, however
//! it dies) *and* the record says the process no longer exists, started at
//! another time, or ran before the last boot. Where neither can be read
//! (no `/proc`, a lock file cut short by a kill between its creation and its
//! first write) the area's age decides ([`super::DEFAULT_STALE_AFTER`]).

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Name of the lock file inside a staging area.
pub(super) const LOCK_NAME: &str = "owner.lock";

/// The open, locked lock file of a live staging area.
#[derive(Debug)]
pub(super) struct OwnerLock {
    _file: File,
}

/// Creates and locks `area/LOCK_NAME` and records this process in it.
pub(super) fn take(area: &Path) -> std::io::Result<OwnerLock> {
    let mut file = File::options().write(true).create_new(true).open(area.join(LOCK_NAME))?;
    // Locked before the record is written, so that a reader who gets the
    // lock never reads a live owner's half-written record. Filesystems
    // without flock fall back on the record alone.
    match file.lock() {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {}
        Err(e) => return Err(e),
    }
    file.write_all(Record::current().to_text().as_bytes())?;
    file.sync_all()?;
    Ok(OwnerLock { _file: file })
}

/// Whether the run that made `area` is provably gone (see the module docs).
///
/// An area without a readable record counts as gone once `incomplete_after`
/// old (its run died between creating it and writing the record); one whose
/// owner cannot be checked (no `/proc`) once `stale_after` old.
pub(super) fn is_stale(area: &Path, stale_after: Duration, incomplete_after: Duration) -> bool {
    let age = std::fs::symlink_metadata(area)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .unwrap_or_default();
    // Without a readable record, the pid in the area's name still tells
    // whether the run that created it can be alive: a run killed between
    // creating the area and writing its record is gone at once.
    let incomplete = age >= incomplete_after.min(stale_after) || creator_is_gone(area);
    let Ok(mut file) = File::open(area.join(LOCK_NAME)) else { return incomplete };
    if let Err(std::fs::TryLockError::WouldBlock) = file.try_lock() {
        return false;
    }
    let mut text = String::new();
    let record = file.read_to_string(&mut text).ok().and_then(|_| Record::parse(&text));
    match record.map(|r| r.liveness()) {
        Some(Liveness::Gone) => true,
        Some(Liveness::Alive) => false,
        Some(Liveness::Unknown) => age >= stale_after,
        None => incomplete,
    }
}

/// Whether the process named in the area's name (`…kapprox-PID-N.tmp`)
/// is known not to exist (Linux `/proc`); unknown counts as not gone.
fn creator_is_gone(area: &Path) -> bool {
    let Some(name) = area.file_name().and_then(|n| n.to_str()) else { return false };
    let Some(pid) = name
        .rsplit_once(super::AREA_TAG)
        .and_then(|(_, rest)| rest.strip_suffix(".tmp"))
        .and_then(|rest| rest.split_once('-'))
        .and_then(|(pid, _)| pid.parse::<u32>().ok())
    else {
        return false;
    };
    Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists()
}

/// What a lock file records about its run.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Record {
    pid: u32,
    /// Start time of the process in clock ticks since boot.
    start: Option<u64>,
    boot: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Liveness {
    Alive,
    Gone,
    Unknown,
}

impl Record {
    fn current() -> Record {
        let pid = std::process::id();
        Record { pid, start: start_time(pid), boot: boot_id() }
    }

    fn to_text(&self) -> String {
        let created = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let mut t = format!("kapprox staging area\npid {}\ncreated {created}\n", self.pid);
        if let Some(s) = self.start {
            t.push_str(&format!("start {s}\n"));
        }
        if let Some(b) = &self.boot {
            t.push_str(&format!("boot {b}\n"));
        }
        t
    }

    fn parse(text: &str) -> Option<Record> {
        let mut lines = text.lines();
        if lines.next()? != "kapprox staging area" {
            return None;
        }
        let (mut pid, mut start, mut boot) = (None, None, None);
        for line in lines {
            match line.split_once(' ')? {
                ("pid", v) => pid = Some(v.parse().ok()?),
                ("start", v) => start = Some(v.parse().ok()?),
                ("boot", v) => boot = Some(v.to_string()),
                _ => {}
            }
        }
        Some(Record { pid: pid?, start, boot })
    }

    fn liveness(&self) -> Liveness {
        let (Some(boot), Some(start)) = (&self.boot, self.start) else { return Liveness::Unknown };
        match boot_id() {
            None => Liveness::Unknown,
            Some(now) if &now != boot => Liveness::Gone,
            Some(_) => match start_time(self.pid) {
                Some(s) if s == start => Liveness::Alive,
                _ => Liveness::Gone,
            },
        }
    }
}

/// The boot id (Linux), which changes at every boot.
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string()).filter(|s| !s.is_empty())
}

/// Field 22 of `/proc/<pid>/stat`: the start time in clock ticks since
/// boot. `None` when there is no such process (or no `/proc`), or when it
/// has ended and only waits to be reaped (a zombie, e.g. an MPI rank whose
/// job was just stopped): it writes nothing any more.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    if matches!(fields.next()?, "Z" | "X") {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let r = Record { pid: 42, start: Some(7), boot: Some("b-1".into()) };
        assert_eq!(Record::parse(&r.to_text()), Some(r));
        assert_eq!(Record::parse("kapprox staging area\npid x\n"), None);
        assert_eq!(Record::parse(""), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_alive_and_an_impostor_is_not() {
        let me = Record::current();
        assert_eq!(me.liveness(), Liveness::Alive);
        let reused = Record { start: me.start.map(|s| s + 1), ..me.clone() };
        assert_eq!(reused.liveness(), Liveness::Gone, "same pid, another start time");
        let rebooted = Record { boot: Some("another boot".into()), ..me };
        assert_eq!(rebooted.liveness(), Liveness::Gone);
    }

    #[test]
    fn a_held_lock_means_alive_and_a_released_one_is_checked() {
        let tmp = tempfile::tempdir().unwrap();
        let area = tmp.path().join("area");
        std::fs::create_dir(&area).unwrap();
        let lock = take(&area).unwrap();
        assert!(!is_stale(&area, Duration::ZERO, Duration::ZERO));
        drop(lock);
        // Released, but the record names this live process.
        if cfg!(target_os = "linux") {
            assert!(!is_stale(&area, Duration::ZERO, Duration::ZERO));
        }
        // A dead owner's record.
        std::fs::write(area.join(LOCK_NAME), "kapprox staging area\npid 4294967295\nstart 1\nboot x\n").unwrap();
        if cfg!(target_os = "linux") {
            assert!(is_stale(&area, Duration::from_secs(3600), Duration::from_secs(3600)));
        }
        // No record: age decides.
        std::fs::remove_file(area.join(LOCK_NAME)).unwrap();
        assert!(!is_stale(&area, Duration::from_secs(3600), Duration::from_secs(3600)));
        assert!(is_stale(&area, Duration::ZERO, Duration::ZERO));
    }

    #[test]
    fn an_area_without_a_record_is_gone_when_its_creator_is() {
        let tmp = tempfile::tempdir().unwrap();
        let hour = Duration::from_secs(3600);
        let dead = tmp.path().join(format!(".out.{}4294967294-0.tmp", super::super::AREA_TAG));
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(LOCK_NAME), "").unwrap();
        let live = tmp.path().join(format!(".out.{}{}-0.tmp", super::super::AREA_TAG, std::process::id()));
        std::fs::create_dir(&live).unwrap();
        if cfg!(target_os = "linux") {
            assert!(is_stale(&dead, hour, hour), "killed before writing its record");
        }
        assert!(!is_stale(&live, hour, hour), "a live creator's area, between creation and record");
    }
}
