/bin/clockstep -first 1 -wait '. /etc/clockwatch-test/lib.sh; cw_wait_content /tmp/wakes $CW_STEP' settime:-12.4s settime:1h0m0s settime:-250ms
/bin/clockstep -gap
date -s '2031-05-06 07:08:09' >/dev/null
/bin/clockstep -gap
CW_STEP=4 sh -c '. /etc/clockwatch-test/lib.sh; cw_wait_content /tmp/wakes $CW_STEP'
/bin/clockstep -first 5 -wait '. /etc/clockwatch-test/lib.sh; cw_wait_content /tmp/wakes $CW_STEP' settime:-1ms settime:1ms settime:-3ms settime:3ms settime:-20ms settime:20ms settime:-500ms settime:500ms settime:-1.5s settime:1.5s settime:-12.4s settime:12.4s settime:-1h0m0s settime:1h0m0s settime:-24h0m0s settime:24h0m0s settime:-8760h0m0s settime:8760h0m0s setoffset:-1ms setoffset:1ms setoffset:-3ms setoffset:3ms setoffset:-20ms setoffset:20ms setoffset:-500ms setoffset:500ms setoffset:-1.5s setoffset:1.5s setoffset:-12.4s setoffset:12.4s setoffset:-1h0m0s setoffset:1h0m0s setoffset:-24h0m0s setoffset:24h0m0s setoffset:-8760h0m0s setoffset:8760h0m0s
