// Package silenced checks the directive.
package silenced

import "time"

var start = time.Now().Unix()

func uptime() int64 {
	//clockwatch:wallclock-ok the dashboard shows wall time since start; a step is visible there anyway
	return time.Now().Unix() - start
}

func uptime2() int64 {
	return time.Now().Unix() - start //clockwatch:wallclock-ok reviewed: display only
}

func uptime3() int64 {
	/* want `needs a reason` */      //clockwatch:wallclock-ok
	return time.Now().Unix() - start // want `subtracts two wall-clock readings`
}

func uptime4() int64 {
	// clockwatch:wallclock-ok the Java spelling // want `misspelt directive`
	return time.Now().Unix() - start // want `subtracts two wall-clock readings`
}
