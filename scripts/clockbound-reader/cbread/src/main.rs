// Reads a segment with ClockBound's own ShmReader and ClockErrorBound::now(),
// or with its VMClock client (clock-bound-vmclock: the segment and the
// VMClock device's disruption marker, as ClockBound's clients read by
// default).
//
//   cbread PATH [N]                      N readings, 100 ms apart
//   cbread --vmclock DEVICE PATH [N]     the same through VMClock::now
//   cbread --bench N [--vmclock DEVICE] PATH
//                                        N back-to-back readings: ns/op
use clock_bound_shm::ShmReader;
use clock_bound_vmclock::VMClock;
use std::ffi::CString;
use std::time::Instant;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut bench: Option<u64> = None;
    let mut vmclock: Option<String> = None;
    loop {
        match args.first().map(|s| s.as_str()) {
            Some("--bench") => { bench = Some(args[1].parse().unwrap()); args.drain(0..2); }
            Some("--vmclock") => { vmclock = Some(args[1].clone()); args.drain(0..2); }
            _ => break,
        }
    }
    let path = args.first().expect("usage: cbread [--bench N] [--vmclock DEVICE] PATH [N]").clone();
    let n: usize = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(1);
    let mut now: Box<dyn FnMut() -> Result<(nix::sys::time::TimeSpec, nix::sys::time::TimeSpec, clock_bound_shm::ClockStatus), clock_bound_shm::ShmError>> =
        match &vmclock {
            Some(dev) => match VMClock::new(&path, dev) {
                Ok(mut v) => Box::new(move || v.now()),
                Err(e) => { println!("error {:?}", e); std::process::exit(1) }
            },
            None => {
                let cpath = CString::new(path.clone()).unwrap();
                match ShmReader::new(cpath.as_c_str()) {
                    Ok(mut r) => Box::new(move || r.snapshot().and_then(|s| s.now())),
                    Err(e) => { println!("error {:?}", e); std::process::exit(1) }
                }
            }
        };
    if let Some(iters) = bench {
        let mut ok = 0u64;
        let start = Instant::now();
        for _ in 0..iters {
            if let Ok((_, _, st)) = now() {
                if st == clock_bound_shm::ClockStatus::Synchronized { ok += 1; }
            }
        }
        let ns = start.elapsed().as_nanos() as f64 / iters as f64;
        println!("bench iterations={} ns_per_op={:.2} synchronized={}", iters, ns, ok);
        return;
    }
    for _ in 0..n {
        match now() {
            Ok((e, l, st)) => {
                let w = (l.tv_sec() - e.tv_sec()) * 1_000_000_000 + (l.tv_nsec() - e.tv_nsec());
                println!("status={:?} width_ns={} earliest={}.{:09}", st, w, e.tv_sec(), e.tv_nsec());
            }
            Err(e) => println!("error {:?}", e),
        }
        if n > 1 { std::thread::sleep(std::time::Duration::from_millis(100)); }
    }
}
