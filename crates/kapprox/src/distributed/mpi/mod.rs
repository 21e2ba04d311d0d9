//! MPI (cargo feature `mpi`): `mpirun -n P kapprox fit ...` and
//! `mpirun -n P kapprox featurize ...` ([`fit()`], [`featurize()`]).
//!
//! Rank `r` of `P` takes part `r + 1` of `P` (contiguous shards, so rank
//! order is shard order). For each pass of `fit`:
//!
//! 1. every rank runs the pass over its shards; ranks other than 0 encode
//!    their state exactly as a part file and send it to rank 0;
//! 2. rank 0 receives the states in rank order, checks them (same run,
//!    pass and progress), merges them left to right into its own and
//!    advances the job;
//! 3. rank 0 broadcasts the pass result (the bytes of a pass-result file),
//!    or "done" after writing the model, or the error that stopped it.
//!
//! States go point to point rather than through `MPI_Reduce`: the merge
//! order, and so the bitwise result, is then the rank order whatever the
//! MPI library's reduction algorithm, and equals the result of `fit --part
//! i/P` files reduced by `kapprox reduce`, or of `fit --workers P`. Messages
//! of any size go in pieces of at most 1 GiB.
//!
//! A rank that fails sends its error instead of a state; rank 0 still
//! receives from every rank (so none is left blocked), then broadcasts the
//! error and every rank exits with status 2. A rank that dies makes
//! `mpirun` stop the job. No model is written in either case.

mod featurize;
mod fit;

pub use featurize::featurize;
pub use fit::{MpiFit, fit};

use crate::observer::{Observer, Silent};
use anyhow::{Context, Result, anyhow};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// Largest piece of one message.
const PIECE: usize = 1 << 30;

const OK: u64 = 0;
const FAILED: u64 = 1;
const CONTINUE: u64 = 2;
const DONE: u64 = 3;

/// Rank and size of `MPI_COMM_WORLD`, initialising MPI.
pub struct World {
    _universe: mpi::environment::Universe,
    world: SimpleCommunicator,
    /// This process's rank.
    pub rank: usize,
    /// Number of ranks.
    pub size: usize,
}

impl World {
    /// Initialises MPI.
    pub fn init() -> Result<World> {
        let universe = mpi::initialize().context("cannot initialise MPI (already initialised?)")?;
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        Ok(World { _universe: universe, world, rank, size })
    }

    /// Sends `status` and `bytes` to rank 0.
    fn send_to_root(&self, status: u64, bytes: &[u8]) {
        let root = self.world.process_at_rank(0);
        root.send(&[status, bytes.len() as u64][..]);
        for piece in bytes.chunks(PIECE) {
            root.send(piece);
        }
    }

    /// Receives the status and length of rank `r`'s message.
    fn receive_header(&self, r: usize) -> (u64, usize) {
        let mut h = [0u64; 2];
        self.world.process_at_rank(r as i32).receive_into(&mut h[..]);
        (h[0], h[1] as usize)
    }

    /// Receives the `len` bytes of rank `r`'s message.
    fn receive_body(&self, r: usize, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        let p = self.world.process_at_rank(r as i32);
        for piece in buf.chunks_mut(PIECE) {
            p.receive_into(piece);
        }
        buf
    }

    /// Broadcasts `status` and `bytes` from rank 0; returns them on every rank.
    fn broadcast(&self, status: u64, bytes: Vec<u8>) -> (u64, Vec<u8>) {
        let root = self.world.process_at_rank(0);
        let mut h = [status, bytes.len() as u64];
        root.broadcast_into(&mut h[..]);
        let mut buf = if self.rank == 0 { bytes } else { vec![0u8; h[1] as usize] };
        for piece in buf.chunks_mut(PIECE) {
            root.broadcast_into(piece);
        }
        (h[0], buf)
    }

    /// Waits for every rank.
    pub fn barrier(&self) {
        self.world.barrier();
    }

    /// The observer of this rank: `observer` on rank 0, silence elsewhere
    /// (one process draws progress).
    pub fn observer<'a>(&self, observer: &'a dyn Observer) -> &'a dyn Observer {
        if self.rank == 0 { observer } else { &Silent }
    }
}

impl World {
    /// Every rank's `local` outcome, on rank 0 in rank order (empty on the
    /// other ranks).
    fn gather(&self, local: Result<Vec<u8>, String>) -> Vec<Result<Vec<u8>, String>> {
        if self.rank != 0 {
            match &local {
                Ok(b) => self.send_to_root(OK, b),
                Err(m) => self.send_to_root(FAILED, m.as_bytes()),
            }
            return Vec::new();
        }
        let mut all = vec![local];
        for r in 1..self.size {
            let (status, len) = self.receive_header(r);
            let body = self.receive_body(r, len);
            all.push(if status == OK { Ok(body) } else { Err(String::from_utf8_lossy(&body).into_owned()) });
        }
        all
    }

    /// A collective check: every rank learns whether all succeeded; the
    /// error names the failed ranks.
    fn agree(&self, local: Result<(), String>) -> Result<()> {
        let all = self.gather(local.map(|()| Vec::new()));
        let failed: Vec<String> =
            all.iter().enumerate().filter_map(|(r, x)| x.as_ref().err().map(|m| format!("rank {r}: {m}"))).collect();
        let (status, body) = if self.rank == 0 {
            if failed.is_empty() {
                self.broadcast(OK, Vec::new())
            } else {
                self.broadcast(FAILED, failed.join("; ").into_bytes())
            }
        } else {
            self.broadcast(0, Vec::new())
        };
        if status == OK { Ok(()) } else { Err(anyhow!("{}", String::from_utf8_lossy(&body))) }
    }
}
