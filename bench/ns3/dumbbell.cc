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
// --shape selects the bottleneck, RED, receiver-delay, start-spacing and
// send-buffer settings of one of pathweave's dumbbell scenario files (the
// default, "dumbbell", is scenarios/dumbbell.toml; "scaled" and "dense" are
// bench/scenarios/dumbbell-10k-{scaled,dense}.toml); each of those settings
// can also be overridden on its own (see --help and README.md).
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
#include <cstdlib>
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

double CpuSeconds();

// Snapshot taken at --mark seconds (simulated), so that the cost of the
// later part of a run (after the flows' start-up) can be reported on its own.
uint64_t g_markTxPackets = 0;
uint64_t g_markTxBytes = 0;
std::chrono::steady_clock::time_point g_markWall;
double g_markCpu = 0;
bool g_markTaken = false;

void
TakeMark()
{
    g_markTxPackets = g_bnTxPackets;
    g_markTxBytes = g_bnTxBytes;
    g_markWall = std::chrono::steady_clock::now();
    g_markCpu = CpuSeconds();
    g_markTaken = true;
}

std::string
JsonDouble(double v)
{
    std::ostringstream os;
    os << std::setprecision(12) << v;
    return os.str();
}

std::string
JsonString(const std::string& v)
{
    std::string out = "\"";
    for (char c : v)
    {
        if (c == '"' || c == '\\')
        {
            out += '\\';
        }
        out += c;
    }
    return out + "\"";
}

// Receiver-delay rule "n", "n/B", "n*A" or "n*A/B" (milliseconds, flow
// n = 1..N), e.g. "n/3" (one-way delay n/3 ms) or "n*8/30000".
// Returns false if malformed.
bool
ParseDelayRule(const std::string& rule, uint64_t& num, uint64_t& den)
{
    std::string r;
    for (char c : rule)
    {
        if (c != ' ')
        {
            r += c;
        }
    }
    if (r.empty() || r[0] != 'n')
    {
        return false;
    }
    size_t pos = 1;
    num = 1;
    den = 1;
    auto readInt = [&](uint64_t& out) {
        const size_t start = pos;
        while (pos < r.size() && r[pos] >= '0' && r[pos] <= '9')
        {
            ++pos;
        }
        if (pos == start || pos - start > 9)
        {
            return false;
        }
        out = std::strtoull(r.substr(start, pos - start).c_str(), nullptr, 10);
        return out > 0;
    };
    if (pos < r.size() && r[pos] == '*')
    {
        ++pos;
        if (!readInt(num))
        {
            return false;
        }
    }
    if (pos < r.size() && r[pos] == '/')
    {
        ++pos;
        if (!readInt(den))
        {
            return false;
        }
    }
    return pos == r.size();
}

// One-way delay of receiver link n under the rule n*num/den ms, rounded to
// the nearest nanosecond.  For n/3 this is the original (n*1e6 + 1)/3.
int64_t
RcvDelayNs(uint32_t n, uint64_t num, uint64_t den)
{
    const unsigned __int128 a = (unsigned __int128)n * num * 1000000u; // delay = a/den ns
    return int64_t((2 * a + den) / (2 * (unsigned __int128)den));
}

// User + system CPU seconds of this process so far.
double
CpuSeconds()
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return double(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           1e-6 * double(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

long
CurrentMaxRssKb()
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_maxrss;
}

} // namespace

int
main(int argc, char* argv[])
{
    const auto setupStart = std::chrono::steady_clock::now();
    uint32_t nFlows = 8;
    double durationS = 100.0;
    uint32_t seed = 1;
    bool sack = false;
    // Send buffer (0 = the shape's default).  dumbbell: 2 MB = 2000 segments,
    // > 5x the path BDP (~370 pkts), so it never limits cwnd (results are
    // bit-identical to 16 MB, checked), but it avoids holding 16k queued
    // Packet objects per flow (16 MB -> ~420 MB peak RSS at 64 flows, which
    // would distort the memory comparison).  A bulk sender keeps its send
    // buffer full, so memory grows with flows x buffer; see the shapes below.
    uint32_t sndBufBytes = 0;
    uint32_t rcvBufBytes = 16u << 20;
    std::string shape = "dumbbell";
    std::string bottleneckRateStr;   // "" = shape default
    uint32_t redLimit = 0;           // packets; 0 = shape default
    double redMinTh = -1;            // < 0 = shape default
    double redMaxTh = -1;            // < 0 = shape default
    std::string redQwStr;            // "" = shape default; "auto" = ns-2.35's rule (QW = -1)
    std::string rcvDelayRule;        // "" = shape default; "n/3", "n*8/30000", ...
    std::string startSpacingStr;     // "" = shape default; an ns-3 time, e.g. "1ms", "100us"
    std::string routing = "global";  // "global" (Ipv4GlobalRouting) or "static" (default routes)
    double markS = 0;                // > 0: snapshot counters and wall clock at this time

    CommandLine cmd(__FILE__);
    cmd.AddValue("flows", "number of TCP flows (N)", nFlows);
    cmd.AddValue("duration", "simulated seconds (goodput is averaged over [0, duration])", durationS);
    cmd.AddValue("seed", "RNG run number (RngSeedManager::SetRun)", seed);
    cmd.AddValue("sack",
                 "enable SACK (default false = classic NewReno; see README for why ns-3.44's "
                 "non-SACK path collapses in this scenario)",
                 sack);
    cmd.AddValue("sndBuf",
                 "TCP send buffer per socket, bytes (0 = shape default: dumbbell 2 MiB, "
                 "scaled 1 MiB, dense 256 KiB)",
                 sndBufBytes);
    cmd.AddValue("rcvBuf", "TCP receive buffer per socket, bytes", rcvBufBytes);
    cmd.AddValue("shape",
                 "dumbbell (scenarios/dumbbell.toml), scaled or dense "
                 "(bench/scenarios/dumbbell-10k-{scaled,dense}.toml): sets the defaults below",
                 shape);
    cmd.AddValue("bottleneckRate", "bottleneck rate, e.g. 60Mbps, 10Gbps (default: shape)",
                 bottleneckRateStr);
    cmd.AddValue("redLimit", "RED queue limit, packets (0 = shape)", redLimit);
    cmd.AddValue("redMinTh", "RED min_th, packets (< 0 = shape)", redMinTh);
    cmd.AddValue("redMaxTh", "RED max_th, packets (< 0 = shape)", redMaxTh);
    cmd.AddValue("redQW",
                 "RED queue weight w_q: a number in (0, 1], or auto (ns-2.35's q_weight_ -1 rule, "
                 "ns-3 QW = -1) (default: shape)",
                 redQwStr);
    cmd.AddValue("rcvDelay",
                 "one-way delay rule of receiver link n, in ms: n/3 or n*8/30000 (n*A/B) "
                 "(default: shape)",
                 rcvDelayRule);
    cmd.AddValue("startSpacing",
                 "flow n starts at n x this time, e.g. 1ms or 100us (default: shape)",
                 startSpacingStr);
    cmd.AddValue("routing",
                 "global (Ipv4GlobalRoutingHelper::PopulateRoutingTables) or static "
                 "(hand-set default routes; setup time and memory linear in flows)",
                 routing);
    cmd.AddValue("mark",
                 "if > 0: also report bottleneck packets and Run() wall time after "
                 "this simulated time (seconds)",
                 markS);
    cmd.Parse(argc, argv);

    if (nFlows < 1 || durationS <= 0)
    {
        std::cerr << "need --flows >= 1 and --duration > 0" << std::endl;
        return 2;
    }

    // ---------------------------------------------------------------- shapes
    // Defaults per shape: bottleneck rate, RED limit/min_th/max_th/w_q, the
    // receiver-delay rule, the start spacing and the send buffer.
    std::string shapeRate;
    uint32_t shapeLimit = 0;
    double shapeMinTh = 0;
    double shapeMaxTh = 0;
    std::string shapeQw;
    std::string shapeDelay;
    std::string shapeSpacing;
    uint32_t shapeSndBuf = 0;
    if (shape == "dumbbell")
    {
        shapeRate = "60Mbps";
        shapeLimit = 50;
        shapeMinTh = 5;
        shapeMaxTh = 15;
        shapeQw = "0.002";
        shapeDelay = "n/3";
        shapeSpacing = "1ms";
        shapeSndBuf = 2u << 20;
    }
    else if (shape == "scaled" || shape == "dense")
    {
        // RED buffer and thresholds of the 8-flow dumbbell scaled with the
        // rate (x167, as rounded in the .toml files), w_q by ns-2.35's rule.
        shapeRate = "10Gbps";
        shapeLimit = 8300;
        shapeMinTh = 830;
        shapeMaxTh = 2500;
        shapeQw = "auto";
        if (shape == "scaled")
        {
            shapeDelay = "n/3";
            shapeSpacing = "1ms";
            // 1 MiB: the longest RTT at 10,000 flows is 2 x (2 + 20 + 3333) ms
            // + queueing ~ 6.72 s, and 1 Mbps over it is 840 kB.  Short-RTT
            // flows can still reach their 100 Mbps access rate (1 MiB / 84 ms).
            shapeSndBuf = 1u << 20;
        }
        else
        {
            shapeDelay = "n*8/30000";
            shapeSpacing = "100us";
            // 256 KiB: every RTT is <= 2 x (2 + 20 + 2.67) ms + 6.9 ms of
            // queue ~ 56 ms, so 1 Mbps needs 7 kB; 256 KiB allows ~37 Mbps.
            shapeSndBuf = 256u << 10;
        }
    }
    else
    {
        std::cerr << "unknown --shape=" << shape << " (dumbbell, scaled, dense)" << std::endl;
        return 2;
    }
    if (bottleneckRateStr.empty())
    {
        bottleneckRateStr = shapeRate;
    }
    if (redLimit == 0)
    {
        redLimit = shapeLimit;
    }
    if (redMinTh < 0)
    {
        redMinTh = shapeMinTh;
    }
    if (redMaxTh < 0)
    {
        redMaxTh = shapeMaxTh;
    }
    if (redQwStr.empty())
    {
        redQwStr = shapeQw;
    }
    if (rcvDelayRule.empty())
    {
        rcvDelayRule = shapeDelay;
    }
    if (startSpacingStr.empty())
    {
        startSpacingStr = shapeSpacing;
    }
    if (sndBufBytes == 0)
    {
        sndBufBytes = shapeSndBuf;
    }
    double redQw = 0;
    if (redQwStr == "auto")
    {
        redQw = -1.0; // ns-3 RedQueueDisc: QW = -1 selects ns-2.35's q_weight_ -1 rule
    }
    else
    {
        char* end = nullptr;
        redQw = std::strtod(redQwStr.c_str(), &end);
        if (end == redQwStr.c_str() || *end != '\0' || !(redQw > 0 && redQw <= 1))
        {
            std::cerr << "--redQW must be in (0, 1] or auto" << std::endl;
            return 2;
        }
    }
    uint64_t delayNum = 1;
    uint64_t delayDen = 3;
    if (!ParseDelayRule(rcvDelayRule, delayNum, delayDen))
    {
        std::cerr << "--rcvDelay must look like n/3 or n*8/30000" << std::endl;
        return 2;
    }
    const Time startSpacing(startSpacingStr);
    if (startSpacing.IsNegative())
    {
        std::cerr << "--startSpacing must be >= 0" << std::endl;
        return 2;
    }
    if (routing != "global" && routing != "static")
    {
        std::cerr << "--routing must be global or static" << std::endl;
        return 2;
    }
    if (redMinTh > redMaxTh)
    {
        std::cerr << "need --redMinTh <= --redMaxTh" << std::endl;
        return 2;
    }
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    // ---------------------------------------------------------------- scenario
    const uint32_t kSegmentBytes = 1000;      // TCP payload per segment (ns-2 packetSize_ 1000)
    const DataRate kAccessRate("100Mbps");
    const Time kSenderAccessDelay = MilliSeconds(2);
    const DataRate kBottleneckRate(bottleneckRateStr);
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
    // The comments give --shape=dumbbell's values; other shapes and the
    // --red* options change MaxSize, MinTh, MaxTh, QW (and the link rate).
    TrafficControlHelper redTch;
    redTch.SetRootQueueDisc(
        "ns3::RedQueueDisc",
        // queue limit 50 packets, packet mode (ns-2 queue-in-bytes_ false)
        "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, redLimit)),
        "MinTh", DoubleValue(redMinTh),       // ns-2 default thresh_ 5
        "MaxTh", DoubleValue(redMaxTh),       // ns-2 default maxthresh_ 15
        "LInterm", DoubleValue(10),           // max_p = 1/LInterm = 0.1 (ns-2 default linterm_ 10)
        "QW", DoubleValue(redQw),             // ns-2 default q_weight_ 0.002; -1 = ns-2.35 auto rule
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
    // For --routing=static: (node, next hop, interface) of every default route.
    struct DefaultRoute
    {
        Ptr<Node> node;
        Ipv4Address nextHop;
        uint32_t iface;
    };
    std::vector<DefaultRoute> defaultRoutes;
    defaultRoutes.reserve(2 * size_t(nFlows) + 2);
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        NetDeviceContainer d = sndLink.Install(senders.Get(i), r1);
        Ipv4InterfaceContainer sifs = addr.Assign(d);
        addr.NewNetwork();
        plainDropTailDevs.Add(d);
        // sender -> R1 (interface 1 of the sender; 0 is the loopback)
        defaultRoutes.push_back({senders.Get(i), sifs.GetAddress(1), 1});

        // Receiver access link of flow n = i+1: one-way delay by the rule
        // (default n/3 ms), rounded to the nanosecond.
        const uint32_t n = i + 1;
        PointToPointHelper rcvLink;
        rcvLink.SetDeviceAttribute("DataRate", DataRateValue(kAccessRate));
        rcvLink.SetChannelAttribute("Delay",
                                    TimeValue(NanoSeconds(RcvDelayNs(n, delayNum, delayDen))));
        rcvLink.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue(kBigDropTail));
        NetDeviceContainer e = rcvLink.Install(r2, receivers.Get(i));
        Ipv4InterfaceContainer ifs = addr.Assign(e);
        addr.NewNetwork();
        plainDropTailDevs.Add(e);
        rcvAddrs[i] = ifs.GetAddress(1);
        // receiver -> R2
        defaultRoutes.push_back({receivers.Get(i), ifs.GetAddress(0), 1});
    }

    // Remove the default pfifo_fast from every non-bottleneck device: those
    // links are plain drop-tail (device queue of 1000 packets).
    TrafficControlHelper noTch;
    noTch.Uninstall(plainDropTailDevs);

    if (routing == "global")
    {
        Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    }
    else
    {
        // Hosts send everything to their router; R1 sends what is not on a
        // sender link (data) over the bottleneck, R2 sends what is not on a
        // receiver link (ACKs) back.  The access links' own networks are the
        // connected routes that Ipv4StaticRouting adds by itself.
        Ptr<Ipv4> ip1 = r1->GetObject<Ipv4>();
        Ptr<Ipv4> ip2 = r2->GetObject<Ipv4>();
        const uint32_t bnIf1 = ip1->GetInterfaceForDevice(bnDevs.Get(0));
        const uint32_t bnIf2 = ip2->GetInterfaceForDevice(bnDevs.Get(1));
        defaultRoutes.push_back({r1, ip2->GetAddress(bnIf2, 0).GetLocal(), bnIf1});
        defaultRoutes.push_back({r2, ip1->GetAddress(bnIf1, 0).GetLocal(), bnIf2});
        Ipv4StaticRoutingHelper srh;
        for (const auto& dr : defaultRoutes)
        {
            srh.GetStaticRouting(dr.node->GetObject<Ipv4>())
                ->SetDefaultRoute(dr.nextHop, dr.iface);
        }
    }

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
        ca.Start(startSpacing * int64_t(i + 1)); // flow n starts at n x spacing (default n ms)
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
    if (markS > 0 && markS < durationS)
    {
        Simulator::Schedule(Seconds(markS), &TakeMark);
    }
    Simulator::Stop(stopAt);
    const long setupRssKb = CurrentMaxRssKb();
    const double cpu0 = CpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    const auto t1 = std::chrono::steady_clock::now();
    const double cpu1 = CpuSeconds();
    const double wallS = std::chrono::duration<double>(t1 - t0).count();
    const double setupWallS = std::chrono::duration<double>(t0 - setupStart).count();
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

    uint32_t flowsStarted = 0;
    for (uint32_t i = 0; i < nFlows; ++i)
    {
        if (startSpacing * int64_t(i + 1) < stopAt)
        {
            ++flowsStarted;
        }
    }
    DoubleValue qwEffective;
    red->GetAttribute("QW", qwEffective); // RED replaces -1 (auto) by the computed weight

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
    js << "  \"peak_rss_kb\": " << ru.ru_maxrss << ",\n";
    js << "  \"shape\": " << JsonString(shape) << ",\n";
    js << "  \"bottleneck_rate_bps\": " << kBottleneckRate.GetBitRate() << ",\n";
    js << "  \"red_limit_packets\": " << redLimit << ",\n";
    js << "  \"red_min_th\": " << JsonDouble(redMinTh) << ",\n";
    js << "  \"red_max_th\": " << JsonDouble(redMaxTh) << ",\n";
    js << "  \"red_qw\": " << JsonString(redQwStr) << ",\n";
    js << "  \"red_qw_effective\": " << JsonDouble(qwEffective.Get()) << ",\n";
    js << "  \"rcv_delay_rule_ms\": " << JsonString(rcvDelayRule) << ",\n";
    js << "  \"start_spacing_s\": " << JsonDouble(startSpacing.GetSeconds()) << ",\n";
    js << "  \"routing\": " << JsonString(routing) << ",\n";
    js << "  \"flows_started\": " << flowsStarted << ",\n";
    js << "  \"us_per_bottleneck_packet\": "
       << JsonDouble(g_bnTxPackets > 0 ? wallS * 1e6 / double(g_bnTxPackets) : 0.0) << ",\n";
    // Share of the bottleneck's capacity used over [0, duration] (bytes on the
    // wire, including the PPP header).
    js << "  \"bottleneck_utilization\": "
       << JsonDouble(double(g_bnTxBytes) * 8.0 / (double(kBottleneckRate.GetBitRate()) * durationS))
       << ",\n";
    if (g_markTaken)
    {
        const uint64_t pk = g_bnTxPackets - g_markTxPackets;
        const double w = std::chrono::duration<double>(t1 - g_markWall).count();
        js << "  \"mark_s\": " << JsonDouble(markS) << ",\n";
        js << "  \"after_mark_bottleneck_tx_packets\": " << pk << ",\n";
        js << "  \"after_mark_wall_s\": " << JsonDouble(w) << ",\n";
        js << "  \"after_mark_cpu_s\": " << JsonDouble(cpu1 - g_markCpu) << ",\n";
        js << "  \"after_mark_us_per_bottleneck_packet\": "
           << JsonDouble(pk > 0 ? w * 1e6 / double(pk) : 0.0) << ",\n";
        js << "  \"after_mark_bottleneck_utilization\": "
           << JsonDouble(double(g_bnTxBytes - g_markTxBytes) * 8.0 /
                         (double(kBottleneckRate.GetBitRate()) * (durationS - markS)))
           << ",\n";
    }
    // CPU time (user + system) of Simulator::Run(): less sensitive than
    // wall_s to other processes competing for the cores.
    js << "  \"run_cpu_s\": " << JsonDouble(cpu1 - cpu0) << ",\n";
    js << "  \"setup_wall_s\": " << JsonDouble(setupWallS) << ",\n";
    js << "  \"setup_peak_rss_kb\": " << setupRssKb << "\n";
    js << "}\n";
    std::cout << js.str() << std::flush;

    Simulator::Destroy();
    return 0;
}
