// A session of the RabbitMQ .NET client 1.x (Debian's libmono-rabbitmq4.0-cil) for
// tests/test_dotnet_peer.py: it speaks AMQP 0-8 or 0-9 with the same field-table tags for
// both, so a 0-8 connection carries 0-9-1 tags.
//
//     mcs -r:/usr/lib/mono/4.5/RabbitMQ.Client.dll dotnet_peer.cs -out:dotnet_peer.exe
//     mono dotnet_peer.exe AMQP_0_8 127.0.0.1 5672 name-suffix
//
// It declares an exchange and a queue with one argument of each type the client writes,
// binds them, publishes a message with the same values as headers, fetches it back with
// basic.get and prints what it read, one "key<TAB>type<TAB>value" line per header.
using System;
using System.Collections;
using System.Text;
using RabbitMQ.Client;

class DotnetPeer
{
    static IDictionary Values()
    {
        IDictionary nested = new Hashtable();
        nested["inner"] = "x";
        IList list = new ArrayList();
        list.Add(1);
        list.Add("two");
        IDictionary values = new Hashtable();
        values["string"] = "naïve";
        values["int"] = -7;
        values["long"] = 1099511627776L;
        values["short"] = (short)-2;
        values["byte"] = (byte)200;
        values["float"] = 1.5f;
        values["double"] = -0.25;
        values["bool"] = true;
        values["bytes"] = new byte[] { 0, 255 };
        values["list"] = list;
        values["table"] = nested;
        values["void"] = null;
        values["decimal"] = -0.001m;
        values["timestamp"] = new AmqpTimestamp(1700000000);
        return values;
    }

    static int Main(string[] args)
    {
        ConnectionFactory factory = new ConnectionFactory();
        factory.Protocol = Protocols.Lookup(args[0]);
        factory.HostName = args[1];
        factory.Port = int.Parse(args[2]);
        string name = "amqp-codec-dotnet-" + args[3];
        using (IConnection connection = factory.CreateConnection())
        {
            IModel channel = connection.CreateModel();
            channel.ExchangeDeclare(name, "fanout", false, false, true, false, false, Values());
            channel.QueueDeclare(name, false, false, false, true, false, null);
            channel.QueueBind(name, name, "", false, null);
            IBasicProperties properties = channel.CreateBasicProperties();
            properties.Headers = Values();
            properties.Timestamp = new AmqpTimestamp(1700000000);
            channel.BasicPublish(name, "", properties, Encoding.UTF8.GetBytes("hello"));
            BasicGetResult got = null;
            for (int attempt = 0; got == null && attempt < 50; attempt++)
            {
                got = channel.BasicGet(name, true);
                if (got == null) System.Threading.Thread.Sleep(100);
            }
            if (got == null)
            {
                Console.Error.WriteLine("basic.get found no message");
                return 1;
            }
            foreach (DictionaryEntry entry in got.BasicProperties.Headers)
            {
                object value = entry.Value;
                string type = value == null ? "null" : value.GetType().Name;
                Console.WriteLine(entry.Key + "\t" + type + "\t" + Show(value));
            }
            channel.QueueDelete(name, false, false, false);
            channel.ExchangeDelete(name, false, false);
            channel.Close();
            connection.Close();
        }
        return 0;
    }

    static string Show(object value)
    {
        if (value == null) return "";
        byte[] bytes = value as byte[];
        if (bytes != null) return BitConverter.ToString(bytes);
        if (value is decimal) return ((decimal)value).ToString(System.Globalization.CultureInfo.InvariantCulture);
        return Convert.ToString(value, System.Globalization.CultureInfo.InvariantCulture);
    }
}
