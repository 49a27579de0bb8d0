#!/bin/bash
cat > /app/server.pl <<'PERL'
use IO::Socket::INET;
my $server = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 7070,
    Listen => 5, ReuseAddr => 1) or die "listen: $!";
while (my $client = $server->accept) { print $client "pong\n"; close $client; }
PERL
setsid nohup perl /app/server.pl > /app/server.log 2>&1 &
for _ in $(seq 50); do
    (exec 3<>/dev/tcp/127.0.0.1/7070) 2>/dev/null && exit 0
    sleep 0.1
done
exit 1
