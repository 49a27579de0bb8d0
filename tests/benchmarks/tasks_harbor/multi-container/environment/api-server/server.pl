use IO::Socket::INET;
my $server = IO::Socket::INET->new(LocalPort => 5000, Listen => 5, ReuseAddr => 1)
    or die "listen: $!";
while (my $client = $server->accept) { print $client "items: $ENV{ITEMS}\n"; close $client; }
