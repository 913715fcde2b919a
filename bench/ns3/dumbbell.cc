// pathweave ns-3 reference run: the "BMC dumbbell" (an ns-2 RED/TCP scenario).
//
// Topology (N = --flows):
//
//   S1 --100Mbps/2ms--+                                   +--100Mbps/(1/3)ms-- D1
//   S2 --100Mbps/2ms--+                                   +--100Mbps/(2/3)ms-- D2
//   ...               R1 ===== 60 Mbps / 20 ms =====> R2  ...
//   SN --100Mbps/2ms--+       (RED on R1's egress)        +--100Mbps/(N/3)ms-- DN
//
// Flow n (n = 1..N) is a TCP NewReno bulk transfer Sn -> Dn that starts at n ms
// and runs until --duration seconds.  At the end a single JSON object is
// printed on stdout (everything else ns-3 might print goes to stderr).
//
// Build: bench/ns3/build.sh  (compiles against the headers/libs of the PyPI
// "ns3" 3.44 wheel).  Run: bench/ns3/build/dumbbell --flows=8 --duration=100

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

// ---- bottleneck transmit counters (R1 -> R2 device, data direction) --------
uint64_t g_bnTxPackets = 0;    // packets whose transmission on the wire completed
uint64_t g_bnTxBytes = 0;      // their size on the wire (incl. the 2-byte PPP header)
uint32_t g_bnMaxPktBytes = 0;  // largest frame seen (= full data segment on the wire)

void
OnBottleneckPhyTxEnd(Ptr<const Packet> p)
{
    ++g_bnTxPackets;
    const uint32_t sz = p->GetSize();
    g_bnTxBytes += sz;
    if (sz > g_bnMaxPktBytes)
    {
        g_bnMaxPktBytes = sz;
    }
}

std::string
JsonDouble(double v)
{
    std::ostringstream os;
    os << std::setprecision(12) << v;
    return os.str();
}

} // namespace

int
main(int argc, char* argv[])
{
    uint32_t nFlows = 8;
    double durationS = 100.0;
    uint32_t seed = 1;
    bool sack = false;
    // Send buffer: 2 MB = 2000 segments, > 5x the path BDP (~370 pkts), so it
    // never limits cwnd (results are bit-identical to 16 MB, checked), but it
    // avoids holding 16k queued Packet objects per flow (16 MB -> ~420 MB peak
    // RSS at 64 flows, which would distort the memory comparison).
    uint32_t sndBufBytes = 2u << 20;
    uint32_t rcvBufBytes = 16u << 20;

    CommandLine cmd(__FILE__);
    cmd.AddValue("flows", "number of TCP flows (N)", nFlows);
    cmd.AddValue("duration", "simulated seconds (goodput is averaged over [0, duration])", durationS);
    cmd.AddValue("seed", "RNG run number (RngSeedManager::SetRun)", seed);
    cmd.AddValue("sack",
                 "enable SACK (default false = classic NewReno; see README for why ns-3.44's "
                 "non-SACK path collapses in this scenario)",
                 sack);
    cmd.AddValue("sndBuf", "TCP send buffer per socket, bytes", sndBufBytes);
    cmd.AddValue("rcvBuf", "TCP receive buffer per socket, bytes", rcvBufBytes);
    cmd.Parse(argc, argv);

    if (nFlows < 1 || durationS <= 0)
    {
        std::cerr << "need --flows >= 1 and --duration > 0" << std::endl;
        return 2;
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    // ---------------------------------------------------------------- scenario
    const uint32_t kSegmentBytes = 1000;      // TCP payload per segment (ns-2 packetSize_ 1000)
    const DataRate kAccessRate("100Mbps");
    const Time kSenderAccessDelay = MilliSeconds(2);
    const DataRate kBottleneckRate("60Mbps");
    const Time kBottleneckDelay = MilliSeconds(20);
    const std::string kBigDropTail = "1000p"; // non-bottleneck queues: never drop

    // ---------------------------------------------------------------- TCP
    // NewReno congestion ops + classic NewReno loss recovery (cwnd = ssthresh on
    // entry, partial ACK -> retransmit next hole), no SACK unless --sack.
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
    // No TCP timestamps: data segments then carry a bare 20-byte TCP header.
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    // Window scaling stays ON (only affects SYNs) so the 16 MB receive buffer
    // can actually be advertised; without it rwnd would cap at 64 KB.
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(kSegmentBytes));
    // Limited transmit (RFC 3042) left at ns-3's default (on), stated explicitly.
    Config::SetDefault("ns3::TcpSocketBase::LimitedTransmit", BooleanValue(true));
    // ns-2 default TCPSink (not DelAck sink) acks every packet: no delayed ACK.
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    // Initial cwnd 2 segments (scenario setting, ns-2 windowInit_ 2).
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(2));
    // Minimum RTO 200 ms (scenario setting, ns-2 minrto_ 0.2).
    // RTO clock granularity stays at ns-3's default 1 ms (ns-2 tcpTick_ differs).
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    // Large buffers: neither the send buffer nor the advertised window (16 MB
    // receive buffer) limit cwnd (ns-2 window_ effectively unbounded here).
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(sndBufBytes));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rcvBufBytes));

    // ---------------------------------------------------------------- nodes
    NodeContainer senders;
    NodeContainer receivers;
    NodeContainer routers;
    senders.Create(nFlows);
    receivers.Create(nFlows);
    routers.Create(2);
    Ptr<Node> r1 = routers.Get(0);
    Ptr<Node> r2 = routers.Get(1);

    InternetStackHelper stack;
    stack.InstallAll();

    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.252"); // one /30 per link

    // Devices whose default queue disc (pfifo_fast, installed by
    // Ipv4AddressHelper) is removed again: they use their own plain
    // drop-tail device queue of kBigDropTail packets.
    NetDeviceContainer plainDropTailDevs;

    // ---------------------------------------------------------------- bottleneck
    PointToPointHelper bnLink;
    bnLink.SetDeviceAttribute("DataRate", DataRateValue(kBottleneckRate));
    bnLink.SetChannelAttribute("Delay", TimeValue(kBottleneckDelay));
    bnLink.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue(kBigDropTail));
    NetDeviceContainer bnDevs = bnLink.Install(r1, r2);
    Ptr<PointToPointNetDevice> bnDevR1 = DynamicCast<PointToPointNetDevice>(bnDevs.Get(0));
    // The device's own queue on R1 is shrunk to 1 packet so that the RED queue
    // disc holds the backlog (the device stops the queue disc via flow control
    // when this 1-packet queue is occupied).  Reverse direction (ACKs, R2's
    // device) stays a 1000-packet drop-tail.
    bnDevR1->GetQueue()->SetMaxSize(QueueSize("1p"));
    plainDropTailDevs.Add(bnDevs.Get(1));

    // RED with ns-2 semantics, installed as root queue disc on R1's device
    // BEFORE addresses are assigned (so no default pfifo_fast replaces it).
    TrafficControlHelper redTch;
    redTch.SetRootQueueDisc(
        "ns3::RedQueueDisc",
        // queue limit 50 packets, packet mode (ns-2 queue-in-bytes_ false)
        "MaxSize", QueueSizeValue(QueueSize("50p")),
        "MinTh", DoubleValue(5),              // ns-2 default thresh_ 5
        "MaxTh", DoubleValue(15),             // ns-2 default maxthresh_ 15
        "LInterm", DoubleValue(10),           // max_p = 1/LInterm = 0.1 (ns-2 default linterm_ 10)
        "QW", DoubleValue(0.002),             // ns-2 default q_weight_ 0.002
        "Gentle", BooleanValue(true),         // ns-2 gentle_ true (scenario setting)
        "Wait", BooleanValue(true),           // ns-2 default wait_ true
        "MeanPktSize", UintegerValue(1040),   // ns-2 mean_pktsize_, set to 1000 B + 40 B TCP/IP
        // Idle decay (always on in ns-3 RED, as in ns-2): after an idle
        // period the average is aged by m = idle_time * LinkBandwidth /
        // (8 * MeanPktSize) packet times.  IdlePktSize would only matter for
        // ns-2's cautious_ == 3 mode, which ns-3 hard-wires off.
        "IdlePktSize", UintegerValue(0),
        // Idle decay uses the link speed/delay (ns-2 takes them from the link).
        "LinkBandwidth", DataRateValue(kBottleneckRate),
        "LinkDelay", TimeValue(kBottleneckDelay),
        "UseEcn", BooleanValue(false),        // drops, not marks
        "ARED", BooleanValue(false),
        "AdaptMaxP", BooleanValue(false),
        "Ns1Compat", BooleanValue(false));
    QueueDiscContainer redQdiscs = redTch.Install(bnDevs.Get(0));
    Ptr<QueueDisc> red = redQdiscs.Get(0);

    addr.Assign(bnDevs);
    addr.NewNetwork();

    // ---------------------------------------------------------------- access links
    PointToPointHelper sndLink;
    sndLink.SetDeviceAttribute("DataRate", DataRateValue(kAccessRate));
    sndLink.SetChannelAttribute("Delay", TimeValue(kSenderAccessDelay));
    sndLink.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue(kBigDropTail));

    std::vector<Ipv4Address> rcvAddrs(nFlows);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        NetDeviceContainer d = sndLink.Install(senders.Get(i), r1);
        addr.Assign(d);
        addr.NewNetwork();
        plainDropTailDevs.Add(d);

        // Receiver access link of flow n = i+1: one-way delay n/3 ms
        // (rounded to the nanosecond).
        const uint32_t n = i + 1;
        PointToPointHelper rcvLink;
        rcvLink.SetDeviceAttribute("DataRate", DataRateValue(kAccessRate));
        rcvLink.SetChannelAttribute("Delay",
                                    TimeValue(NanoSeconds((int64_t(n) * 1000000 + 1) / 3)));
        rcvLink.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue(kBigDropTail));
        NetDeviceContainer e = rcvLink.Install(r2, receivers.Get(i));
        Ipv4InterfaceContainer ifs = addr.Assign(e);
        addr.NewNetwork();
        plainDropTailDevs.Add(e);
        rcvAddrs[i] = ifs.GetAddress(1);
    }

    // Remove the default pfifo_fast from every non-bottleneck device: those
    // links are plain drop-tail (device queue of 1000 packets).
    TrafficControlHelper noTch;
    noTch.Uninstall(plainDropTailDevs);

    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // ---------------------------------------------------------------- applications
    const uint16_t kPort = 50000;
    const Time stopAt = Seconds(durationS);
    std::vector<Ptr<PacketSink>> sinks(nFlows);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), kPort));
        ApplicationContainer sa = sinkHelper.Install(receivers.Get(i));
        sa.Start(Seconds(0));
        sa.Stop(stopAt);
        sinks[i] = DynamicCast<PacketSink>(sa.Get(0));

        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(rcvAddrs[i], kPort));
        src.SetAttribute("MaxBytes", UintegerValue(0)); // unlimited (ns-2 FTP)
        src.SetAttribute("SendSize", UintegerValue(kSegmentBytes));
        ApplicationContainer ca = src.Install(senders.Get(i));
        ca.Start(MilliSeconds(i + 1)); // flow n starts at n ms
        ca.Stop(stopAt);
    }

    // Count frames leaving R1 toward R2 (data direction of the bottleneck).
    bnDevR1->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&OnBottleneckPhyTxEnd));

    // Sanity: the queue disc on the bottleneck device must be our RED instance.
    Ptr<TrafficControlLayer> tc = r1->GetObject<TrafficControlLayer>();
    Ptr<QueueDisc> rootQd = tc->GetRootQueueDiscOnDevice(bnDevR1);
    if (rootQd != red || !DynamicCast<RedQueueDisc>(rootQd))
    {
        std::cerr << "RED queue disc is not the root queue disc of the bottleneck device"
                  << std::endl;
        return 3;
    }

    // ---------------------------------------------------------------- run
    Simulator::Stop(stopAt);
    const auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    const auto t1 = std::chrono::steady_clock::now();
    const double wallS = std::chrono::duration<double>(t1 - t0).count();
    const uint64_t events = Simulator::GetEventCount();

    // ---------------------------------------------------------------- results
    std::vector<double> goodput(nFlows);
    double sum = 0;
    double sumSq = 0;
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        goodput[i] = double(sinks[i]->GetTotalRx()) * 8.0 / durationS;
        sum += goodput[i];
        sumSq += goodput[i] * goodput[i];
    }
    const double jain = sumSq > 0 ? (sum * sum) / (double(nFlows) * sumSq) : 0.0;

    const QueueDisc::Stats& st = red->GetStats();
    const uint32_t earlyDrops = st.GetNDroppedPackets(RedQueueDisc::UNFORCED_DROP);
    const uint32_t forcedDrops = st.GetNDroppedPackets(RedQueueDisc::FORCED_DROP);
    const uint32_t qlimDrops = st.GetNDroppedPackets(QueueDisc::INTERNAL_QUEUE_DROP);

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);

    std::ostringstream js;
    js << "{\n";
    js << "  \"simulator\": \"ns-3.44\",\n";
    js << "  \"flows\": " << nFlows << ",\n";
    js << "  \"duration_s\": " << JsonDouble(durationS) << ",\n";
    js << "  \"seed\": " << seed << ",\n";
    js << "  \"sack\": " << (sack ? "true" : "false") << ",\n";
    js << "  \"snd_buf_bytes\": " << sndBufBytes << ",\n";
    js << "  \"rcv_buf_bytes\": " << rcvBufBytes << ",\n";
    js << "  \"per_flow_goodput_bps\": [";
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        js << (i ? ", " : "") << JsonDouble(goodput[i]);
    }
    js << "],\n";
    js << "  \"aggregate_goodput_bps\": " << JsonDouble(sum) << ",\n";
    js << "  \"jain_index\": " << JsonDouble(jain) << ",\n";
    js << "  \"bottleneck_tx_packets\": " << g_bnTxPackets << ",\n";
    js << "  \"bottleneck_tx_bytes\": " << g_bnTxBytes << ",\n";
    js << "  \"bottleneck_max_frame_bytes\": " << g_bnMaxPktBytes << ",\n";
    // red_drops = every packet the RED queue disc dropped: early (probabilistic)
    // + forced (avg above 2*MaxTh with Gentle) + queue-limit overflow.  ns-2's
    // RED counts the last two together as "forced"; ns-3 reports them apart.
    js << "  \"red_drops\": " << (earlyDrops + forcedDrops + qlimDrops) << ",\n";
    js << "  \"red_early_drops\": " << earlyDrops << ",\n";
    js << "  \"red_forced_drops\": " << forcedDrops << ",\n";
    js << "  \"red_queue_limit_drops\": " << qlimDrops << ",\n";
    js << "  \"red_total_dropped_packets\": " << st.nTotalDroppedPackets << ",\n";
    js << "  \"red_sent_packets\": " << st.nTotalSentPackets << ",\n";
    js << "  \"wall_s\": " << JsonDouble(wallS) << ",\n";
    js << "  \"bottleneck_packets_per_wall_s\": "
       << JsonDouble(wallS > 0 ? double(g_bnTxPackets) / wallS : 0.0) << ",\n";
    js << "  \"events\": " << events << ",\n";
    js << "  \"peak_rss_kb\": " << ru.ru_maxrss << "\n";
    js << "}\n";
    std::cout << js.str() << std::flush;

    Simulator::Destroy();
    return 0;
}
