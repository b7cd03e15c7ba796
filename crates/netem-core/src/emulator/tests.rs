//! Every netem rule on a virtual clock. Statistical checks use fixed seeds and bounds of
//! several standard errors, so they are deterministic and not flaky.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::profile::{DelayDistribution, LossModel, Reorder};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

fn spec() -> DirectionSpec {
    DirectionSpec {
        overhead_bytes: 0,
        ..DirectionSpec::default()
    }
}

/// Releases everything due at `now`, returning (payload, due) pairs.
fn release_all<T>(em: &mut LinkEmulator<T>, now: u64) -> Vec<(T, u64)> {
    let mut out = Vec::new();
    while let Some(r) = em.poll_release(now) {
        out.push((r.payload, r.due_ns));
    }
    out
}

fn queued_at<T: std::fmt::Debug>(v: Verdict<T>) -> u64 {
    match v {
        Verdict::Queued { release_at_ns } => release_at_ns,
        other => panic!("expected queued, got {other:?}"),
    }
}

#[test]
fn zero_delay_releases_at_arrival() {
    let mut em = LinkEmulator::new(&spec(), 1).unwrap();
    assert_eq!(queued_at(em.handle_packet(5 * MS, 100, 7)), 5 * MS);
    assert_eq!(em.next_release_time(), Some(5 * MS));
    let r = em.poll_release(5 * MS).unwrap();
    assert_eq!(
        (r.payload, r.len, r.arrived_ns, r.due_ns),
        (7, 100, 5 * MS, 5 * MS)
    );
    assert!(em.poll_release(u64::MAX).is_none());
    assert_eq!(em.next_release_time(), None);
}

#[test]
fn fixed_delay_holds_until_due() {
    let s = DirectionSpec {
        delay_ns: 10 * MS,
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 1).unwrap();
    em.handle_packet(0, 100, 1u32);
    assert!(em.poll_release(10 * MS - 1).is_none());
    assert_eq!(em.poll_release(10 * MS).unwrap().payload, 1);
}

#[test]
fn rate_serializes_back_to_back_packets() {
    // 8 Mbit/s: one byte per microsecond, so 1000 bytes take 1 ms.
    let s = DirectionSpec {
        delay_ns: 10 * MS,
        rate_bps: Some(8_000_000),
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 1).unwrap();
    let times: Vec<u64> = (0..4)
        .map(|i| queued_at(em.handle_packet(0, 1000, i)))
        .collect();
    assert_eq!(times, vec![11 * MS, 12 * MS, 13 * MS, 14 * MS]);
}

#[test]
fn rate_max_rule_uses_the_later_of_delay_and_last_held() {
    let s = DirectionSpec {
        delay_ns: 10 * MS,
        rate_bps: Some(8_000_000),
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 1).unwrap();
    assert_eq!(queued_at(em.handle_packet(0, 1000, 0)), 11 * MS);
    // now + delay = 15 ms is later than the last held tts (11 ms): delay wins.
    assert_eq!(queued_at(em.handle_packet(5 * MS, 1000, 1)), 16 * MS);
    // now + delay = 16.5 ms is later than the last held tts (16 ms): 16.5 + 1.
    assert_eq!(
        queued_at(em.handle_packet(6 * MS + 500 * US, 1000, 2)),
        17 * MS + 500 * US
    );
    // Arriving at 7 ms: 17 ms < last held 17.5 ms, so it queues behind it.
    assert_eq!(
        queued_at(em.handle_packet(7 * MS, 1000, 3)),
        18 * MS + 500 * US
    );
    // Once everything has left, the reference point is gone: back to now + delay + ser.
    assert_eq!(release_all(&mut em, 20 * MS).len(), 4);
    assert_eq!(queued_at(em.handle_packet(20 * MS, 1000, 4)), 31 * MS);
}

#[test]
fn rate_with_jitter_matches_reference_formula() {
    // Independent re-derivation: tts_n = max(a_n + d_n, tts_{n-1}) + ser, with the same draws.
    let s = DirectionSpec {
        delay_ns: 15 * MS,
        jitter_ns: 2 * MS,
        rate_bps: Some(100_000_000),
        overhead_bytes: 14,
        ..DirectionSpec::default()
    };
    let seed = 42;
    let mut em = LinkEmulator::new(&s, seed).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let sampler = DelaySampler::new(s.delay_ns, s.jitter_ns, s.distribution);
    let ser = s.serialization_ns(1500).unwrap();
    assert_eq!(ser, 121_120);

    let mut now = 0u64;
    let mut last_tts: Option<u64> = None;
    let mut released_order = Vec::new();
    for i in 0..20_000u32 {
        // Mix of bursts and gaps so that both branches of max() are taken.
        now += if i % 50 < 40 { 50 * US } else { 3 * MS };
        for (id, _) in release_all(&mut em, now) {
            released_order.push(id);
        }
        let d = sampler.sample(&mut rng) as u64;
        let held_last = last_tts.filter(|_| em.held() > 0);
        let expected = held_last.map_or(now + d, |l| l.max(now + d)) + ser;
        let got = queued_at(em.handle_packet(now, 1500, i));
        assert_eq!(got, expected, "packet {i}");
        last_tts = Some(got);
    }
    for (id, _) in release_all(&mut em, u64::MAX) {
        released_order.push(id);
    }
    // With a rate, tts never decreases, so nothing reorders.
    assert!(released_order.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(released_order.len(), 20_000);
}

#[test]
fn queue_limit_counts_packets_waiting_out_their_delay() {
    let s = DirectionSpec {
        delay_ns: 10 * MS,
        limit_packets: 3,
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 1).unwrap();
    let verdicts: Vec<bool> = (0..5)
        .map(|i| em.handle_packet(i * US, 100, i as u32).is_queued())
        .collect();
    assert_eq!(verdicts, vec![true, true, true, false, false]);
    assert_eq!(em.held(), 3);
    // Releasing one frees exactly one slot.
    assert_eq!(em.poll_release(10 * MS).unwrap().payload, 0);
    assert!(em.handle_packet(10 * MS, 100, 9).is_queued());
    assert!(matches!(
        em.handle_packet(10 * MS, 100, 10),
        Verdict::QueueFull(10)
    ));
    let c = em.counters();
    assert_eq!(
        (c.arrived, c.queue_dropped, c.released, c.lost),
        (7, 3, 1, 0)
    );
}

#[test]
fn lost_packets_use_no_queue_or_link_time() {
    let s = DirectionSpec {
        delay_ns: 10 * MS,
        rate_bps: Some(8_000_000),
        loss: LossModel::Random { probability: 0.5 },
        limit_packets: 4,
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 7).unwrap();
    let mut queued = Vec::new();
    let mut lost = 0;
    for i in 0..40u32 {
        match em.handle_packet(0, 1000, i) {
            Verdict::Queued { release_at_ns } => queued.push(release_at_ns),
            Verdict::Lost(_) => lost += 1,
            Verdict::QueueFull(_) => {}
        }
    }
    assert!(lost > 5, "seed 7 should lose some of 40 packets at 50 %");
    // Only admitted packets occupy the link: 11, 12, 13, 14 ms, whatever was lost in between.
    assert_eq!(queued, vec![11 * MS, 12 * MS, 13 * MS, 14 * MS]);
    let c = em.counters();
    assert_eq!(c.lost, lost);
    assert_eq!(c.arrived, c.lost + c.queue_dropped + em.held() as u64);
}

fn loss_fraction(model: LossModel, seed: u64, n: u64) -> f64 {
    let s = DirectionSpec {
        loss: model,
        limit_packets: u32::MAX,
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, seed).unwrap();
    for i in 0..n {
        em.handle_packet(i, 64, ());
        em.poll_release(i);
    }
    em.counters().lost as f64 / n as f64
}

#[test]
fn random_loss_rate_within_statistical_bounds() {
    for (p, seed) in [(0.001, 1), (0.01, 2), (0.2, 3)] {
        let n = 1_000_000;
        let got = loss_fraction(LossModel::Random { probability: p }, seed, n);
        let se = (p * (1.0 - p) / n as f64).sqrt();
        assert!(
            (got - p).abs() < 5.0 * se,
            "p={p}: got {got}, 5 se = {}",
            5.0 * se
        );
    }
    assert_eq!(
        loss_fraction(LossModel::Random { probability: 0.0 }, 1, 10_000),
        0.0
    );
    assert_eq!(
        loss_fraction(LossModel::Random { probability: 1.0 }, 1, 10_000),
        1.0
    );
}

#[test]
fn gilbert_elliott_long_run_rate_and_bursts() {
    let model = LossModel::GilbertElliott {
        p: 0.01,
        r: 0.49,
        one_minus_h: 1.0,
        one_minus_k: 0.0,
    };
    let s = DirectionSpec {
        loss: model,
        limit_packets: u32::MAX,
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 11).unwrap();
    let n = 2_000_000u64;
    let mut bursts = 0u64;
    let mut in_burst = false;
    for i in 0..n {
        let lost = matches!(em.handle_packet(i, 64, ()), Verdict::Lost(_));
        em.poll_release(i);
        if lost && !in_burst {
            bursts += 1;
        }
        in_burst = lost;
    }
    let lost = em.counters().lost;
    let rate = lost as f64 / n as f64;
    let se = (model.asymptotic_variance() / n as f64).sqrt();
    assert!(
        (rate - 0.02).abs() < 5.0 * se,
        "rate {rate}, 5 se {}",
        5.0 * se
    );
    // The bad state loses everything, so a burst lasts a geometric number of packets:
    // each lost packet is followed by another with probability 1 - r.
    let mean_burst = lost as f64 / bursts as f64;
    assert!(
        (mean_burst - 1.0 / 0.49).abs() < 0.05,
        "mean burst {mean_burst}"
    );
}

#[test]
fn gilbert_elliott_decides_loss_from_the_state_before_the_transition() {
    // p = 1: the first packet moves the chain to bad but is judged in good (not lost);
    // r = 0: it never comes back, and every later packet is lost.
    let s = DirectionSpec {
        loss: LossModel::GilbertElliott {
            p: 1.0,
            r: 0.0,
            one_minus_h: 1.0,
            one_minus_k: 0.0,
        },
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 3).unwrap();
    assert_eq!(em.ge_state(), Some(GeState::Good));
    assert!(em.handle_packet(0, 64, 0u32).is_queued());
    assert_eq!(em.ge_state(), Some(GeState::Bad));
    for i in 1..100 {
        assert!(matches!(
            em.handle_packet(i, 64, i as u32),
            Verdict::Lost(_)
        ));
    }

    // 1-h = 0 and 1-k = 0: the chain moves but nothing is ever lost.
    let s = DirectionSpec {
        loss: LossModel::GilbertElliott {
            p: 0.3,
            r: 0.3,
            one_minus_h: 0.0,
            one_minus_k: 0.0,
        },
        limit_packets: u32::MAX,
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 4).unwrap();
    let mut saw_bad = false;
    for i in 0..10_000u32 {
        assert!(em.handle_packet(i as u64, 64, i).is_queued());
        saw_bad |= em.ge_state() == Some(GeState::Bad);
    }
    assert!(saw_bad);
}

fn delays(spec: &DirectionSpec, seed: u64, n: usize) -> Vec<u64> {
    let mut em = LinkEmulator::new(spec, seed).unwrap();
    (0..n)
        .map(|i| {
            // Far apart, so that nothing interacts.
            let now = 1_000_000 * MS + i as u64 * 100 * MS;
            let at = queued_at(em.handle_packet(now, 100, 0));
            em.poll_release(u64::MAX);
            at - now
        })
        .collect()
}

fn mean_sd(v: &[u64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[test]
fn uniform_jitter_stays_in_bounds_with_the_right_moments() {
    let s = DirectionSpec {
        delay_ns: 15 * MS,
        jitter_ns: 2 * MS,
        ..spec()
    };
    let d = delays(&s, 5, 200_000);
    assert!(d.iter().all(|&x| (13 * MS..17 * MS).contains(&x)));
    assert!(*d.iter().min().unwrap() < 13 * MS + 1000);
    assert!(*d.iter().max().unwrap() > 17 * MS - 1000);
    let (mean, sd) = mean_sd(&d);
    let expected_sd = 2.0 * MS as f64 / 3f64.sqrt();
    // Standard error of the mean is sd / sqrt(n) = 2.6 us; allow 5 of them.
    assert!((mean - 15.0 * MS as f64).abs() < 13_000.0, "mean {mean}");
    assert!((sd / expected_sd - 1.0).abs() < 0.01, "sd {sd}");
}

#[test]
fn table_distributions_match_their_moments() {
    for dist in [DelayDistribution::Normal, DelayDistribution::Pareto] {
        let s = DirectionSpec {
            delay_ns: 50 * MS,
            jitter_ns: 5 * MS,
            distribution: dist,
            ..spec()
        };
        let d = delays(&s, 9, 200_000);
        let (mean, sd) = mean_sd(&d);
        let sampler = DelaySampler::new(s.delay_ns, s.jitter_ns, dist);
        let (em, ev) = sampler.moments();
        let (lo, hi) = sampler.range();
        assert!(d.iter().all(|&x| x as i64 >= lo && x as i64 <= hi));
        assert!(
            (mean - em).abs() < 5.0 * ev.sqrt() / 200_000f64.sqrt(),
            "{dist:?} mean"
        );
        assert!((sd / ev.sqrt() - 1.0).abs() < 0.02, "{dist:?} sd {sd}");
    }
    // netem's normal table is clipped at 4 sd.
    let s = DelaySampler::new(50 * MS, 5 * MS, DelayDistribution::Normal);
    let (lo, hi) = s.range();
    assert!(lo >= (50 * MS - 20 * MS) as i64 - 1 && hi <= (50 * MS + 20 * MS) as i64);
}

fn release_order(spec: &DirectionSpec, seed: u64) -> (Vec<u32>, Vec<u64>) {
    let mut em = LinkEmulator::new(spec, seed).unwrap();
    let mut ids = Vec::new();
    let mut dues = Vec::new();
    let mut now = 0;
    for i in 0..5_000u32 {
        now += 100 * US;
        for (id, due) in release_all(&mut em, now) {
            ids.push(id);
            dues.push(due);
        }
        em.handle_packet(now, 200, i);
    }
    for (id, due) in release_all(&mut em, u64::MAX) {
        ids.push(id);
        dues.push(due);
    }
    (ids, dues)
}

#[test]
fn jitter_without_rate_reorders_in_tts_order() {
    let s = DirectionSpec {
        delay_ns: 15 * MS,
        jitter_ns: 2 * MS,
        limit_packets: 10_000,
        ..spec()
    };
    let (ids, dues) = release_order(&s, 13);
    assert_eq!(ids.len(), 5_000);
    // Leaves in time-to-send order ...
    assert!(dues.windows(2).all(|w| w[0] <= w[1]));
    // ... which is not arrival order: packets 100 us apart with +-2 ms jitter overtake.
    let inversions = ids.windows(2).filter(|w| w[0] > w[1]).count();
    assert!(inversions > 1_000, "only {inversions} inversions");
}

#[test]
fn jitter_with_rate_never_reorders() {
    let s = DirectionSpec {
        delay_ns: 15 * MS,
        jitter_ns: 2 * MS,
        rate_bps: Some(1_000_000_000),
        limit_packets: 10_000,
        ..spec()
    };
    let (ids, dues) = release_order(&s, 13);
    assert_eq!(ids, (0..5_000).collect::<Vec<_>>());
    assert!(dues.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn reorder_sends_a_share_of_packets_at_once() {
    let s = DirectionSpec {
        delay_ns: 10 * MS,
        reorder: Some(Reorder {
            probability: 0.25,
            gap: 1,
        }),
        limit_packets: u32::MAX,
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 21).unwrap();
    let n = 200_000u64;
    let mut immediate = 0u64;
    for i in 0..n {
        let now = i * 100 * MS;
        if queued_at(em.handle_packet(now, 100, ())) == now {
            immediate += 1;
        }
        release_all(&mut em, u64::MAX);
    }
    let share = immediate as f64 / n as f64;
    let se = (0.25f64 * 0.75 / n as f64).sqrt();
    assert!((share - 0.25).abs() < 5.0 * se, "share {share}");
    assert_eq!(em.counters().reordered, immediate);
}

#[test]
fn reorder_gap_makes_every_nth_packet_a_candidate() {
    let s = DirectionSpec {
        delay_ns: 10 * MS,
        reorder: Some(Reorder {
            probability: 1.0,
            gap: 5,
        }),
        limit_packets: u32::MAX,
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 1).unwrap();
    let immediate: Vec<bool> = (0..15u64)
        .map(|i| queued_at(em.handle_packet(i, 100, ())) == i)
        .collect();
    let expected: Vec<bool> = (0..15).map(|i| i % 5 == 4).collect();
    assert_eq!(immediate, expected);
    // A reordered packet overtakes the delayed ones.
    let first = em.poll_release(20).unwrap();
    assert_eq!(first.arrived_ns, 14);
}

#[test]
fn counters_balance_and_seeds_reproduce() {
    let s = DirectionSpec {
        delay_ns: 5 * MS,
        jitter_ns: MS,
        loss: LossModel::Random { probability: 0.05 },
        rate_bps: Some(10_000_000),
        limit_packets: 50,
        ..spec()
    };
    let run = |seed| {
        let mut em = LinkEmulator::new(&s, seed).unwrap();
        let mut log = Vec::new();
        for i in 0..20_000u64 {
            let now = i * 50 * US;
            log.extend(release_all(&mut em, now).into_iter().map(|(id, _)| id));
            em.handle_packet(now, 1000, i);
            let c = em.counters();
            assert_eq!(
                c.arrived,
                c.lost + c.queue_dropped + c.released + em.held() as u64
            );
        }
        let c = em.counters();
        assert!(c.lost > 0 && c.queue_dropped > 0 && c.released > 0);
        (log, c)
    };
    assert_eq!(run(99), run(99));
    assert_ne!(run(99).0, run(100).0);
}

#[test]
fn drain_returns_everything_held() {
    let s = DirectionSpec {
        delay_ns: 10 * MS,
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 1).unwrap();
    for i in 0..5u32 {
        em.handle_packet(0, 10, i);
    }
    assert_eq!(em.drain(), vec![0, 1, 2, 3, 4]);
    assert_eq!(em.held(), 0);
}

#[test]
fn queue_wait_counts_serialization_and_the_packets_ahead_only() {
    // 1000-byte packets at 8 Mbit/s: 1 ms each on the wire, 10 ms of delay.
    let s = DirectionSpec {
        delay_ns: 10 * MS,
        rate_bps: Some(8_000_000),
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 1).unwrap();
    for _ in 0..3 {
        em.handle_packet(0, 1000, ());
    }
    // Waits of 1, 2 and 3 ms beyond the 10 ms delay.
    let c = em.counters();
    assert_eq!((c.arrived, c.bytes, c.queue_wait_ns), (3, 3000, 6 * MS));
    assert_eq!(c.mean_queue_wait_ns(), Some(2.0 * MS as f64));
    // Alone on an idle link later: its own serialization only.
    em.handle_packet(100 * MS, 1000, ());
    assert_eq!(em.counters().since(&c).queue_wait_ns, MS);
    // Without a rate nothing waits.
    let mut plain = LinkEmulator::new(
        &DirectionSpec {
            delay_ns: 10 * MS,
            ..spec()
        },
        1,
    )
    .unwrap();
    plain.handle_packet(0, 1000, ());
    plain.handle_packet(0, 1000, ());
    assert_eq!(plain.counters().queue_wait_ns, 0);
}

#[test]
fn window_counters_are_differences_and_lost_bytes_are_counted() {
    let s = DirectionSpec {
        loss: LossModel::Random { probability: 1.0 },
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 1).unwrap();
    em.handle_packet(0, 100, ());
    let start = em.counters();
    em.handle_packet(1, 200, ());
    em.handle_packet(2, 300, ());
    let window = em.counters().since(&start);
    assert_eq!(
        (window.arrived, window.lost, window.bytes, window.lost_bytes),
        (2, 2, 500, 500)
    );
    assert_eq!(window.admitted(), 0);
    assert_eq!(window.mean_queue_wait_ns(), None);
}

#[test]
fn offload_bundles_are_lost_and_serialized_as_one_unit() {
    use crate::vnet::Bundle;
    // A TSO bundle of 10 segments of 1448 bytes behind 52 header bytes each, as the kernel hands
    // it over with IFF_VNET_HDR.
    let mut frame = vec![0u8; crate::vnet::VNET_HDR_LEN];
    frame[1] = 1; // GSO_TCPV4
    frame[4..6].copy_from_slice(&1448u16.to_le_bytes());
    let mut ip = vec![0u8; 52 + 14_480];
    ip[0] = 0x45;
    ip[32] = 8 << 4;
    frame.extend_from_slice(&ip);
    let bundle = Bundle::parse(&frame).unwrap();
    assert_eq!((bundle.segments, bundle.wire_len), (10, 15_000));

    // The rate charges all ten segments' bytes (plus one overhead, as netem charges per skb).
    let s = DirectionSpec {
        rate_bps: Some(100_000_000),
        overhead_bytes: 14,
        ..spec()
    };
    let mut em = LinkEmulator::new(&s, 1).unwrap();
    let due = queued_at(em.handle_packet(0, bundle.wire_len, ()));
    assert_eq!(due, (15_000 + 14) * 8 * 1_000_000_000 / 100_000_000);

    // At 0.1 % per unit, the same bytes sent as bundles of 10 meet ~10x fewer loss events,
    // while the share of bytes lost stays 0.1 %.
    let lossy = DirectionSpec {
        loss: LossModel::Random { probability: 0.001 },
        ..spec()
    };
    let mut per_packet = LinkEmulator::new(&lossy, 7).unwrap();
    let mut per_bundle = LinkEmulator::new(&lossy, 7).unwrap();
    for i in 0..1_000_000u64 {
        per_packet.handle_packet(i, 1500, ());
        if i % 10 == 0 {
            per_bundle.handle_packet(i, 15_000, ());
        }
    }
    let (p, b) = (per_packet.counters(), per_bundle.counters());
    assert_eq!((p.bytes, b.bytes), (1_500_000_000, 1_500_000_000));
    // Expected 1000 and 100 events; 5 standard errors.
    assert!((850..=1150).contains(&p.lost), "{p:?}");
    assert!((50..=150).contains(&b.lost), "{b:?}");
    let share = |c: &Counters| c.lost_bytes as f64 / c.bytes as f64;
    assert!((share(&p) - 0.001).abs() < 0.00016, "{}", share(&p));
    assert!((share(&b) - 0.001).abs() < 0.0005, "{}", share(&b));
}
